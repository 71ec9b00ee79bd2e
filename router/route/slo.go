package route

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/router/admission"
)

// sloMetrics count answered requests against the TTFT target, per model:
// the autoscaling signal's SLO attainment (router/autoscale) is
// met ÷ (met + missed) over a window, which Prometheus computes from the
// counters rather than the router keeping windows of its own.
type sloMetrics struct {
	target time.Duration
	total  *prometheus.CounterVec // model, result (met, missed)
}

func newSLOMetrics(target time.Duration) *sloMetrics {
	return &sloMetrics{target: target, total: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmgw_model_ttft_slo_requests_total",
		Help: "Requests answered by each model's replicas, by whether the replica's first byte came within the TTFT target (scaling ttft_target) of the request being sent: met or missed.",
	}, []string{"model", "result"})}
}

// observe counts one answer of model's that took ttft from being sent.
func (m *sloMetrics) observe(model string, ttft time.Duration) {
	result := "met"
	if ttft > m.target {
		result = "missed"
	}
	m.total.WithLabelValues(model, result).Inc()
}

// timed wraps answered so that the replica's first byte counts against the
// TTFT target, once, for replica's model. The model is looked up at the
// answer, off the path that sends the request.
func (pl *Planner) timed(replica string, answered func()) func() {
	sent := time.Now()
	var done atomic.Bool
	return func() {
		answered()
		if !done.CompareAndSwap(false, true) {
			return
		}
		if model, ok := pl.d.Replicas.ModelOf(replica); ok {
			pl.slo.observe(model, time.Since(sent))
		}
	}
}

// Backlog is what model's admission queue holds now: the autoscaling
// signal's queued requests and queue wait.
func (pl *Planner) Backlog(model string) admission.Backlog {
	return pl.admit.Backlog(model, time.Now())
}
