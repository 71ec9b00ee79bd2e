package route

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the planner's Prometheus series: what was decided and what
// deciding cost. Their names are the router's (llmgw_*) and unchanged by
// where they are kept.
type Metrics struct {
	Decisions    *prometheus.CounterVec   // mode
	CachedTokens *prometheus.HistogramVec // mode
	Overhead     *prometheus.HistogramVec // stage
	RateLimited  *prometheus.CounterVec   // tenant, limit
	PD           *prometheus.CounterVec   // path
}

func newMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
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
		RateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_rate_limited_total", Help: "Requests refused with 429 by their tenant's limits, by tenant and limit (requests, tokens, tokens_too_large, concurrent_requests, concurrent_streams).",
		}, []string{"tenant", "limit"}),
		PD: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_pd_requests_total",
			Help: "Requests to models with prefill and decode replicas by path: remote_prefill, decode_cached, aggregated_replica, role_unavailable, no_prefill_replica, prefill_failed, api_without_kv_transfer.",
		}, []string{"path"}),
	}
	if err := registerAll(reg, m.Decisions, m.CachedTokens, m.Overhead, m.RateLimited, m.PD); err != nil {
		return nil, err
	}
	return m, nil
}

// registerAll registers cs, naming the first that fails.
func registerAll(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("route: register metrics: %w", err)
		}
	}
	return nil
}
