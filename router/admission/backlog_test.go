package admission

import (
	"context"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/tenant"
)

// TestBacklog: a model's backlog counts its waiters alone, and its oldest
// wait is measured from the first waiter's arrival, across tenants and
// bands; an empty or unknown model has none.
func TestBacklog(t *testing.T) {
	t.Parallel()
	q := New(Options{Timeout: time.Minute, MaxWaiters: 8, Poll: time.Hour})
	if got := q.Backlog("m", time.Now()); got != (Backlog{}) {
		t.Fatalf("unknown model: %+v; want none", got)
	}
	var cap slots
	start := time.Now()
	a := queued(t, q, context.Background(), NoPriority, cap.take)
	queuedAt := time.Now()
	b := queued(t, q, as(&tenant.Tenant{Name: "other", Weight: 1, Priority: 5}), 5, cap.take)
	now := queuedAt.Add(time.Hour)
	got := q.Backlog("m", now)
	if got.Waiting != 2 {
		t.Errorf("waiting %d; want 2", got.Waiting)
	}
	// The first waiter arrived between start and queuedAt.
	if lo, hi := now.Sub(queuedAt), now.Sub(start); got.Oldest < lo || got.Oldest > hi {
		t.Errorf("oldest wait %s; want %s..%s", got.Oldest, lo, hi)
	}
	if other := q.Backlog("n", now); other != (Backlog{}) {
		t.Errorf("another model: %+v; want none", other)
	}
	for _, done := range []<-chan error{b, a} { // the higher band first
		cap.release(1)
		q.Wake("m")
		if err := <-done; err != nil {
			t.Errorf("waiter: %v", err)
		}
	}
	if got := q.Backlog("m", now); got != (Backlog{}) {
		t.Errorf("after admission: %+v; want none", got)
	}
}
