package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the router's Prometheus series (names llmgw_*). They live in
// their own registry, not the global one, so tests and embedders can run
// several routers in one process.
type Metrics struct {
	Registry *prometheus.Registry

	Requests     *prometheus.CounterVec   // endpoint, code
	Decisions    *prometheus.CounterVec   // mode
	CachedTokens *prometheus.HistogramVec // mode
	Overhead     *prometheus.HistogramVec // stage
	Attempts     *prometheus.CounterVec   // result
	Ingest       *prometheus.CounterVec   // code
	RateLimited  *prometheus.CounterVec   // tenant, limit
	PD           *prometheus.CounterVec   // path
	Migrations   *migrationMetrics
}

// NewMetrics registers the gateway's series, plus extra collectors (the
// replica and index gauges the server provides), in a fresh registry.
func NewMetrics(extra ...prometheus.Collector) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_requests_total", Help: "Client requests by endpoint and HTTP status.",
		}, []string{"endpoint", "code"}),
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_routing_decisions_total", Help: "Routed requests by the chosen replica's routing mode (exact, approx, load; disaggregated for prefill on one replica, decode on another).",
		}, []string{"mode"}),
		CachedTokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "llmgw_predicted_cached_tokens", Help: "Prompt tokens predicted to be cached on the chosen replica.",
			Buckets: prometheus.ExponentialBuckets(16, 4, 8),
		}, []string{"mode"}),
		Overhead: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "llmgw_routing_overhead_seconds",
			Help:    "Routing time per stage: render, tokenize, hash, schedule (index lookup and scoring) and total.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 11),
		}, []string{"stage"}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_upstream_attempts_total", Help: "Attempts to reach a replica by result (ok, connect_error, retry_status, engine_unauthorized, canceled, bad_prefill_response).",
		}, []string{"result"}),
		Ingest: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_kv_ingest_requests_total", Help: "KV update requests from drivers by HTTP status.",
		}, []string{"code"}),
	}
	m.RateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmgw_rate_limited_total", Help: "Requests refused with 429 by their tenant's limits, by tenant and limit (requests, tokens, tokens_too_large, concurrent_requests, concurrent_streams).",
	}, []string{"tenant", "limit"})
	m.PD = newPDMetric()
	m.Registry.MustRegister(m.Requests, m.Decisions, m.CachedTokens, m.Overhead, m.Attempts, m.Ingest, m.RateLimited, m.PD,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Migrations = newMigrationMetrics()
	m.Registry.MustRegister(m.Migrations.collectors()...)
	for _, c := range extra {
		m.Registry.MustRegister(c)
	}
	return m
}
