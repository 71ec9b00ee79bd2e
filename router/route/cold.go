package route

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/llmgw/llmgw/router/admission"
)

// ColdStart holds a request for a model at zero replicas until one passes
// its check (admission.Cold); Hold returns at once for every other model.
// Models are the models it starts, sorted.
type ColdStart interface {
	Hold(ctx context.Context, model string) error
	Models() []string
}

type requestIDKey struct{}

// maxRequestID bounds the client's request id as logged: it is the
// client's text, up to the header limit.
const maxRequestID = 128

// RequestID is the id of the request whose plan ctx is for (Input's
// RequestID), "" when it has none: the cold-start stage hook
// (admission.ColdOptions.Stage) logs it.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// holdCold waits, when d.Cold is set, for a replica of model to pass its
// check; it returns how long it waited. A model at zero replicas is
// answered 429 when its hold is full and 503 when no replica came in
// time, with Retry-After, in OpenAI's shape.
func (pl *Planner) holdCold(ctx context.Context, in Input, model string) (time.Duration, *Error) {
	if pl.d.Cold == nil {
		return 0, nil
	}
	if in.explain { // explaining a request must not start a model
		if len(pl.d.Replicas.ForModel(model)) == 0 && slices.Contains(pl.d.Cold.Models(), model) {
			return 0, &Error{Status: http.StatusServiceUnavailable, Message: model + " is at zero replicas; explain does not start it"}
		}
		return 0, nil
	}
	if id := in.RequestID; id != "" {
		ctx = context.WithValue(ctx, requestIDKey{}, id[:min(len(id), maxRequestID)])
	}
	start := time.Now()
	err := pl.d.Cold.Hold(ctx, model)
	waited := time.Since(start)
	if err == nil {
		return waited, nil
	}
	var rej *admission.ColdRejected
	switch {
	case errors.As(err, &rej) && rej.TimedOut():
		return waited, &Error{Status: http.StatusServiceUnavailable, Message: rej.Detail + "; retry later", RetryAfter: rej.RetryAfter}
	case errors.As(err, &rej):
		return waited, &Error{Status: http.StatusTooManyRequests, Message: rej.Detail + "; retry later", RetryAfter: rej.RetryAfter}
	}
	return waited, &Error{Status: http.StatusServiceUnavailable, Message: "waiting for " + model + " to start: " + err.Error()}
}
