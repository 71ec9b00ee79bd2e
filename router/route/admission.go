package route

import (
	"errors"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/router/admission"
)

// busy is the 429 of a request that found every replica of model busy and
// could not wait, or waited its whole queue timeout: backpressure, with
// the queue's estimate of when to retry.
func busy(model string, err error) *Error {
	e := &Error{Status: http.StatusTooManyRequests, Message: "every replica of " + model + " is over its load threshold; retry later", RetryAfter: time.Second}
	var rej *admission.Rejected
	if errors.As(err, &rej) {
		e.Message = "every replica of " + model + " is over its load threshold and " + rej.Detail + "; retry later"
		e.RetryAfter = rej.RetryAfter
	}
	return e
}
