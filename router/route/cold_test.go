package route

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/replicas"
)

// coldFunc is a ColdStart answering with f.
type coldFunc func(ctx context.Context, model string) error

func (f coldFunc) Hold(ctx context.Context, model string) error { return f(ctx, model) }

func (coldFunc) Models() []string { return []string{"m"} }

// TestHoldColdAnswers: the hold's outcomes become the client's answer: a
// released request goes on, a full hold is a 429 and a timed-out one a
// 503, each with the hold's Retry-After; the hold sees the request id.
func TestHoldColdAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		retryAfter time.Duration
	}{
		{"released", nil, 0, 0},
		{"full", &admission.ColdRejected{Reason: "queue_full", RetryAfter: 5 * time.Second, Detail: "m is starting and 64 requests already wait for it"}, http.StatusTooManyRequests, 5 * time.Second},
		{"tenant full", &admission.ColdRejected{Reason: "tenant_queue_full", RetryAfter: 5 * time.Second, Detail: "d"}, http.StatusTooManyRequests, 5 * time.Second},
		{"timed out", &admission.ColdRejected{Reason: "timeout", RetryAfter: 5 * time.Second, Detail: "d"}, http.StatusServiceUnavailable, 5 * time.Second},
		{"left", context.Canceled, http.StatusServiceUnavailable, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sawID, sawModel string
			pl := &Planner{d: Deps{Cold: coldFunc(func(ctx context.Context, model string) error {
				sawID, sawModel = RequestID(ctx), model
				return tc.err
			})}}
			_, e := pl.holdCold(context.Background(), Input{RequestID: "req-1"}, "m")
			if sawID != "req-1" || sawModel != "m" {
				t.Fatalf("hold saw request %q for %q; want req-1 for m", sawID, sawModel)
			}
			if tc.status == 0 {
				if e != nil {
					t.Fatalf("released request refused: %v", e)
				}
				return
			}
			var rej *admission.ColdRejected
			if e == nil || e.Status != tc.status || e.RetryAfter != tc.retryAfter || errors.As(tc.err, &rej) && e.Message != rej.Detail+"; retry later" {
				t.Fatalf("answer %+v; want %d with Retry-After %s", e, tc.status, tc.retryAfter)
			}
		})
	}
	var long string
	pl := &Planner{d: Deps{Cold: coldFunc(func(ctx context.Context, _ string) error { long = RequestID(ctx); return nil })}}
	if _, e := pl.holdCold(context.Background(), Input{RequestID: strings.Repeat("x", 1000)}, "m"); e != nil || len(long) != maxRequestID {
		t.Fatalf("a long request id: %v, %d bytes kept; want %d", e, len(long), maxRequestID)
	}
	if _, e := (&Planner{}).holdCold(context.Background(), Input{}, "m"); e != nil {
		t.Fatalf("no hold configured: %v", e)
	}
}

// TestExplainDoesNotStartAModel: explaining a request for a model at zero
// answers 503 and never holds it; a model with replicas, or one that
// does not scale from zero, goes on to be explained.
func TestExplainDoesNotStartAModel(t *testing.T) {
	t.Parallel()
	models := index.NewModels(index.Options{})
	set := replicas.New(ingest.New(models, ingest.Options{}), load.NewTracker(), replicas.Options{})
	held := 0
	pl := &Planner{d: Deps{Replicas: set, Cold: coldFunc(func(context.Context, string) error { held++; return nil })}}
	if _, e := pl.holdCold(context.Background(), Input{explain: true}, "m"); e == nil || e.Status != http.StatusServiceUnavailable {
		t.Fatalf("explain for a model at zero: %+v; want 503", e)
	}
	if _, e := pl.holdCold(context.Background(), Input{explain: true}, "other"); e != nil {
		t.Fatalf("explain for a model that does not scale from zero: %+v", e)
	}
	if held != 0 {
		t.Fatalf("explain held %d requests", held)
	}
}
