package kvxfer

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the NIXL connector's Prometheus series vLLM exports
// (NixlPromMetrics), labelled like the engine's, counters with the _total
// suffix Python's client writes: one transfer is one pull
// by a decode instance. A descriptor is counted per block (vLLM counts one
// per block and layer region).
type Metrics struct {
	xferTime, bytes, descriptors *prometheus.HistogramVec
	failed, expired              *prometheus.CounterVec
}

// NewMetrics registers the series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	labels := []string{"model_name", "engine"}
	h := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		reg.MustRegister(v)
		return v
	}
	c := func(name, help string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	return &Metrics{
		xferTime:    h("vllm:nixl_xfer_time_seconds", "Histogram of transfer duration for NIXL KV Cache transfers.", prometheus.ExponentialBuckets(0.001, 2, 13)),
		bytes:       h("vllm:nixl_bytes_transferred", "Histogram of bytes transferred per NIXL KV Cache transfers.", prometheus.ExponentialBuckets(2048, 4, 12)),
		descriptors: h("vllm:nixl_num_descriptors", "Histogram of number of descriptors per NIXL KV Cache transfers.", prometheus.ExponentialBuckets(10, 2, 13)),
		failed:      c("vllm:nixl_num_failed_transfers_total", "Number of failed NIXL KV Cache transfers."),
		expired:     c("vllm:nixl_num_kv_expired_reqs_total", "Number of requests that had their KV expire."),
	}
}

// Engine is one engine's view of the series.
type Engine struct {
	m      *Metrics
	labels prometheus.Labels
}

// For returns the series of one engine (data-parallel rank).
func (m *Metrics) For(model string, rank int) Engine {
	l := prometheus.Labels{"model_name": model, "engine": strconv.Itoa(rank)}
	// Touch every series so it reads 0 before the first transfer.
	m.xferTime.With(l)
	m.bytes.With(l)
	m.descriptors.With(l)
	m.failed.With(l)
	m.expired.With(l)
	return Engine{m: m, labels: l}
}

// Transferred records one pull.
func (e Engine) Transferred(blocks int, bytes int64, d time.Duration) {
	e.m.xferTime.With(e.labels).Observe(d.Seconds())
	e.m.bytes.With(e.labels).Observe(float64(bytes))
	e.m.descriptors.With(e.labels).Observe(float64(blocks))
}

// Failed records a pull that failed.
func (e Engine) Failed() { e.m.failed.With(e.labels).Inc() }

// Expired records a hold released unread.
func (e Engine) Expired() { e.m.expired.With(e.labels).Inc() }
