package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the gateway's Prometheus series (names llmgw_*) and the
// registry the router's other parts (route.Planner, the server's
// collectors) register theirs in. It is a registry of its own, not the
// global one, so tests and embedders can run several routers in one
// process.
type Metrics struct {
	Registry *prometheus.Registry

	Requests   *prometheus.CounterVec // endpoint, code
	Attempts   *prometheus.CounterVec // result
	Ingest     *prometheus.CounterVec // code
	Migrations *migrationMetrics
	// ResponsesKept counts Responses answers by what became of them in
	// the conversation store (kept, too_large, not_kept).
	ResponsesKept *prometheus.CounterVec
	// Warms counts the prefix copies sent to idle replicas (route.Plan.Warm)
	// by result: ok, error, canceled, skipped (too many in flight).
	Warms *prometheus.CounterVec
}

// NewMetrics registers the gateway's series, plus extra collectors (the
// replica and index gauges the server provides), in a fresh registry.
func NewMetrics(extra ...prometheus.Collector) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_requests_total", Help: "Client requests by endpoint and HTTP status.",
		}, []string{"endpoint", "code"}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_upstream_attempts_total", Help: "Attempts to reach a replica by result (ok, connect_error, retry_status, engine_unauthorized, canceled, bad_prefill_response).",
		}, []string{"result"}),
		Ingest: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_kv_ingest_requests_total", Help: "KV update requests from drivers by HTTP status.",
		}, []string{"code"}),
		ResponsesKept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_responses_kept_total", Help: "Responses API answers the client asked to store, by result: kept, too_large (over the store's entry limit), not_kept (an error, a failed or cut stream).",
		}, []string{"result"}),
		Warms: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_prefix_warms_total", Help: "Prompts sent to an idle replica to copy a hot shared prefix there, by result: ok, error, canceled (the router closing), skipped (too many copies in flight).",
		}, []string{"result"}),
	}
	m.Registry.MustRegister(m.Requests, m.Attempts, m.Ingest, m.ResponsesKept, m.Warms,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Migrations = newMigrationMetrics()
	m.Registry.MustRegister(m.Migrations.collectors()...)
	for _, c := range extra {
		m.Registry.MustRegister(c)
	}
	return m
}
