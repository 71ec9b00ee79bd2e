package admission

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the queue's Prometheus series, labelled by priority band.
// They are not labelled by tenant: tenants come from a keys file an
// operator may grow to thousands of entries, and each name would add a
// histogram's worth of series; bands are at most 21. Per-tenant use is
// what the rate limits report.
type Metrics struct {
	Depth    *prometheus.GaugeVec     // band
	Wait     *prometheus.HistogramVec // band, result
	Rejected *prometheus.CounterVec   // band, reason
}

// NewMetrics makes the series; register Collectors in the router's
// registry.
func NewMetrics() *Metrics {
	return &Metrics{
		Depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "llmgw_queue_waiting", Help: "Requests waiting for a replica under its busy threshold, by priority band.",
		}, []string{"band"}),
		Wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "llmgw_queue_wait_seconds",
			Help:    "Time queued requests waited, by priority band and how the wait ended (admitted, timeout, canceled).",
			Buckets: prometheus.ExponentialBuckets(1e-3, 2, 17),
		}, []string{"band", "result"}),
		Rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_queue_rejected_total", Help: "Requests answered 429 by the queue, by priority band and reason (queue_full, tenant_queue_full, timeout, no_queue).",
		}, []string{"band", "reason"}),
	}
}

// Collectors are the series to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Depth, m.Wait, m.Rejected}
}

func bandLabel(b int) string { return strconv.Itoa(b) }

// ColdMetrics are the series of requests held for models at zero
// replicas (Cold), labelled by model: only the models configured to scale
// from zero, a handful.
type ColdMetrics struct {
	Waiting  *prometheus.GaugeVec     // model
	Wait     *prometheus.HistogramVec // model, result
	Rejected *prometheus.CounterVec   // model, reason
	Scale    *prometheus.CounterVec   // model, direction, result
}

// NewColdMetrics makes the series; register Collectors in the router's
// registry.
func NewColdMetrics() *ColdMetrics {
	return &ColdMetrics{
		Waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "llmgw_cold_waiting", Help: "Requests waiting for the first replica of a model scaled to zero, by model.",
		}, []string{"model"}),
		Wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "llmgw_cold_wait_seconds",
			Help:    "Time requests for a model at zero replicas waited for one, by model and how the wait ended (ready, timeout, canceled).",
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 12),
		}, []string{"model", "result"}),
		Rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_cold_rejected_total", Help: "Requests for a model at zero replicas answered 429 (queue_full, tenant_queue_full) or 503 (timeout), by model and reason.",
		}, []string{"model", "reason"}),
		Scale: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_cold_scale_total", Help: "Scale calls this router made to start (up) or stop (down) a model's job, by model, direction and result (changed, unchanged: another router moved it first, error).",
		}, []string{"model", "direction", "result"}),
	}
}

// Collectors are the series to register.
func (m *ColdMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Waiting, m.Wait, m.Rejected, m.Scale}
}
