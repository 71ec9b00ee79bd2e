package gateway

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/llmgw/llmgw/router/admission"
)

// newAdmission builds the queue requests wait in while every replica of
// their model is busy, with its series in d.Metrics' registry.
func newAdmission(d Deps) *admission.Queue {
	m := admission.NewMetrics()
	d.Metrics.Registry.MustRegister(m.Collectors()...)
	return admission.New(admission.Options{Timeout: d.QueueTimeout, MaxWaiters: d.MaxQueue, MaxPerTenant: d.MaxQueuePerTenant, Metrics: m})
}

// busy is the 429 of a request that found every replica of model busy and
// could not wait, or waited its whole queue timeout: backpressure, with
// the queue's estimate of when to retry.
func busy(model string, err error) *errStatus {
	es := &errStatus{code: http.StatusTooManyRequests, msg: "every replica of " + model + " is over its load threshold; retry later", retryAfter: time.Second}
	var rej *admission.Rejected
	if errors.As(err, &rej) {
		es.msg = "every replica of " + model + " is over its load threshold and " + rej.Detail + "; retry later"
		es.retryAfter = rej.RetryAfter
	}
	return es
}

// setRetryAfter sends e's retry estimate, in whole seconds, at least 1.
func (e *errStatus) setRetryAfter(w http.ResponseWriter) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(e.retryAfter.Seconds())))))
	}
}
