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
