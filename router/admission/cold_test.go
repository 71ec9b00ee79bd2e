package admission

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/tenant"
)

// fakeJob is a job's count, as a Starter moves it, and whether a replica
// passes its check. up, when set, runs on a change to a count above zero:
// the test plays the Nomad client.
type fakeJob struct {
	mu            sync.Mutex
	count         int
	ready         bool
	starts, stops int // calls
	changes       int // calls that moved the count
	up            func(j *fakeJob)
	startErr      error
}

func (j *fakeJob) Start(context.Context, string) (bool, error) {
	j.mu.Lock()
	j.starts++
	if j.startErr != nil || j.count > 0 {
		err := j.startErr
		j.mu.Unlock()
		return false, err
	}
	j.count = 1
	j.changes++
	up := j.up
	j.mu.Unlock()
	if up != nil {
		up(j)
	}
	return true, nil
}

func (j *fakeJob) Stop(context.Context, string) (bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stops++
	if j.count == 0 {
		return false, nil
	}
	j.count, j.ready = 0, false
	j.changes++
	return true, nil
}

func (j *fakeJob) Count(context.Context, string) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.count, nil
}

func (j *fakeJob) isReady(string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.ready
}

func (j *fakeJob) setReady(r bool) {
	j.mu.Lock()
	j.ready = r
	j.mu.Unlock()
}

func (j *fakeJob) snapshot() (count, starts, stops, changes int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.count, j.starts, j.stops, j.changes
}

// stages records what Cold tells its Stage hook.
type stages struct {
	mu  sync.Mutex
	got []Stage
}

func (s *stages) add(_ context.Context, st Stage) {
	s.mu.Lock()
	s.got = append(s.got, st)
	s.mu.Unlock()
}

func (s *stages) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, st := range s.got {
		out = append(out, st.Name+":"+st.Result)
	}
	return out
}

func newCold(t *testing.T, j *fakeJob, o ColdOptions) *Cold {
	t.Helper()
	if o.Idle == nil {
		o.Idle = map[string]time.Duration{"m": 10 * time.Minute}
	}
	o.Ready, o.Starter = j.isReady, j
	if o.Poll == 0 {
		o.Poll = time.Millisecond
	}
	c, err := NewCold(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor polls cond: the condition is another goroutine's progress.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestColdHoldStartsOnceAndReleases: requests for a model at zero wait;
// the first asks for a replica, once, and all are released when one
// passes its check. The stages say so.
func TestColdHoldStartsOnceAndReleases(t *testing.T) {
	release := make(chan struct{})
	j := &fakeJob{up: func(j *fakeJob) {
		go func() { <-release; j.setReady(true) }()
	}}
	var st stages
	c := newCold(t, j, ColdOptions{Stage: st.add, Metrics: NewColdMetrics()})
	if got := c.State("m"); got != StateCold {
		t.Fatalf("state %q before; want cold", got)
	}
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() { errs <- c.Hold(context.Background(), "m") }()
	}
	waitFor(t, "8 waiters", func() bool { return c.Waiting("m") == n })
	if got := c.State("m"); got != StateStarting {
		t.Fatalf("state %q while waiting; want starting", got)
	}
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, starts, _, changes := j.snapshot(); starts != 1 || changes != 1 {
		t.Fatalf("%d starts, %d changes; want 1, 1", starts, changes)
	}
	if got := c.State("m"); got != StateWarm || c.Waiting("m") != 0 {
		t.Fatalf("state %q, %d waiting after; want warm, 0", got, c.Waiting("m"))
	}
	var scale, wait int
	for _, s := range st.got {
		switch {
		case s.Name == "scale" && s.Changed && s.Err == nil:
			scale++
		case s.Name == "wait" && s.Result == "ready":
			wait++
		}
	}
	if scale != 1 || wait != n {
		t.Fatalf("stages %v; want one changing scale and %d ready waits", st.names(), n)
	}
	if err := c.Hold(context.Background(), "other"); err != nil {
		t.Fatalf("a model that does not scale from zero: %v", err)
	}
}

// TestColdBounds: past the model's or the tenant's share a request is
// refused at once (429); one whose replica is not ready in time times out
// (503); a client that leaves frees its place.
func TestColdBounds(t *testing.T) {
	j := &fakeJob{} // replicas asked for never pass their checks
	c := newCold(t, j, ColdOptions{MaxWaiting: 3, MaxPerTenant: 2, Timeout: time.Hour})
	ctxA := tenant.NewContext(context.Background(), &tenant.Tenant{Name: "a"})
	ctxB, cancelB := context.WithCancel(tenant.NewContext(context.Background(), &tenant.Tenant{Name: "b"}))
	ctx, cancel := context.WithCancel(ctxA)
	done := make(chan error, 3)
	go func() { done <- c.Hold(ctx, "m") }()
	go func() { done <- c.Hold(ctx, "m") }()
	waitFor(t, "two of a's", func() bool { return c.Waiting("m") == 2 })
	var rej *ColdRejected
	if err := c.Hold(ctxA, "m"); !errors.As(err, &rej) || rej.Reason != "tenant_queue_full" || rej.TimedOut() || rej.RetryAfter <= 0 {
		t.Fatalf("a's third: %v; want tenant_queue_full", err)
	}
	go func() { done <- c.Hold(ctxB, "m") }()
	waitFor(t, "b's", func() bool { return c.Waiting("m") == 3 })
	if err := c.Hold(tenant.NewContext(context.Background(), &tenant.Tenant{Name: "c"}), "m"); !errors.As(err, &rej) || rej.Reason != "queue_full" {
		t.Fatalf("c's first: %v; want queue_full", err)
	}
	cancel()
	for range 2 {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("left: %v", err)
		}
	}
	waitFor(t, "a's gone", func() bool { return c.Waiting("m") == 1 })
	cancelB()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("b left: %v", err)
	}

	short := newCold(t, &fakeJob{}, ColdOptions{Timeout: time.Millisecond})
	if err := short.Hold(context.Background(), "m"); !errors.As(err, &rej) || !rej.TimedOut() {
		t.Fatalf("no replica in time: %v; want timeout", err)
	}
}

// TestColdRetriesAFailedStart: a start that fails is tried again while
// requests wait, at most once per Retry.
func TestColdRetriesAFailedStart(t *testing.T) {
	j := &fakeJob{startErr: errors.New("nomad unreachable")}
	j.up = func(j *fakeJob) { j.setReady(true) }
	c := newCold(t, j, ColdOptions{Retry: time.Millisecond})
	done := make(chan error, 1)
	go func() { done <- c.Hold(context.Background(), "m") }()
	waitFor(t, "a failed start", func() bool { _, starts, _, _ := j.snapshot(); return starts >= 1 })
	j.mu.Lock()
	j.startErr = nil
	j.mu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if count, starts, _, changes := j.snapshot(); count != 1 || changes != 1 || starts < 2 {
		t.Fatalf("count %d, %d starts, %d changes; want 1 after a retry", count, starts, changes)
	}
}

// TestColdStartsOnceWhileWaiting: a start that succeeded is not called
// again while its requests wait, however short Retry is.
func TestColdStartsOnceWhileWaiting(t *testing.T) {
	j := &fakeJob{} // asked for, never ready
	c := newCold(t, j, ColdOptions{Retry: time.Millisecond, Timeout: 50 * time.Millisecond})
	var rej *ColdRejected
	if err := c.Hold(context.Background(), "m"); !errors.As(err, &rej) || !rej.TimedOut() {
		t.Fatalf("hold: %v; want a timeout", err)
	}
	if _, starts, _, changes := j.snapshot(); starts != 1 || changes != 1 {
		t.Fatalf("%d starts, %d changes; want 1, 1", starts, changes)
	}
}

// TestColdReap: a model goes to zero once its idle time has passed since
// its last request, not while requests are in flight on any router, and
// Reap does not call again until another request comes.
func TestColdReap(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	j := &fakeJob{count: 1, ready: true}
	var remote bool
	c := newCold(t, j, ColdOptions{Now: clock, InFlight: func(string) bool { return remote }})
	ctx := context.Background()
	steps := []struct {
		advance time.Duration
		remote  bool
		request bool
		stopped int // models Reap reports stopped
		stops   int // Stop calls so far
	}{
		{advance: 9 * time.Minute, stopped: 0, stops: 0},
		{advance: 2 * time.Minute, remote: true, stopped: 0, stops: 0}, // a peer's request in flight
		{advance: 9 * time.Minute, stopped: 0, stops: 0},               // 9 min since the peer's
		{advance: 2 * time.Minute, stopped: 1, stops: 1},
		{advance: time.Hour, stopped: 0, stops: 1}, // already stopped: no call
		{advance: 0, request: true, stopped: 0, stops: 1},
		{advance: 10 * time.Minute, stopped: 0, stops: 2}, // at zero already: a call, no change
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		remote = s.remote
		if s.request {
			c.touch(c.models["m"])
		}
		got := c.Reap(ctx)
		if _, _, stops, _ := j.snapshot(); len(got) != s.stopped || stops != s.stops {
			t.Fatalf("step %d: stopped %v, %d Stop calls; want %d, %d", i, got, stops, s.stopped, s.stops)
		}
	}
	if count, _, _, _ := j.snapshot(); count != 0 || c.State("m") != StateCold {
		t.Fatalf("count %d, state %q; want 0, cold", count, c.State("m"))
	}
}
