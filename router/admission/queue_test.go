package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/tenant"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// slots is the tests' capacity: a try takes a free slot; the test frees
// them, as requests ending would.
type slots struct {
	mu   sync.Mutex
	free int
}

func (s *slots) take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free == 0 {
		return false
	}
	s.free--
	return true
}

func (s *slots) release(n int) {
	s.mu.Lock()
	s.free += n
	s.mu.Unlock()
}

func as(t *tenant.Tenant) context.Context { return tenant.NewContext(context.Background(), t) }

// queued starts Admit on its own goroutine and waits until it is queued;
// the result arrives on the returned channel.
func queued(t *testing.T, q *Queue, ctx context.Context, priority int, try func() bool) <-chan error {
	t.Helper()
	before := q.Waiting()
	done := make(chan error, 1)
	go func() { done <- q.Admit(ctx, "m", priority, try) }()
	poll.Until(t, "the request to queue", func() bool { return q.Waiting() == before+1 })
	return done
}

// TestFastPathAllocatesNothing: with nobody waiting, an admission whose
// first try succeeds allocates nothing (the gateway's decision path has a
// zero-allocation contract).
func TestFastPathAllocatesNothing(t *testing.T) {
	q := New(Options{Timeout: time.Second, MaxWaiters: 8})
	ctx := context.Background()
	hits := 0
	try := func() bool { hits++; return true }
	if err := q.Admit(ctx, "m", NoPriority, try); err != nil { // adds the pool
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { _ = q.Admit(ctx, "m", NoPriority, try) }); n != 0 {
		t.Errorf("uncontended Admit allocates %.1f times per call; want 0", n)
	}
	if hits < 1001 {
		t.Errorf("try ran %d times; want once per Admit", hits)
	}
}

// TestOrder: capacity freed one slot at a time goes to the highest band
// first, a header can lower a request's band but not raise it, and within
// a band tenants share by weight (weight 2 gets two turns to weight 1's).
func TestOrder(t *testing.T) {
	t.Parallel()
	q := New(Options{Timeout: time.Minute, MaxWaiters: 64, Poll: time.Hour})
	var cap slots
	var mu sync.Mutex
	var order []string
	ask := func(tn *tenant.Tenant, priority int, label string) <-chan error {
		return queued(t, q, as(tn), priority, func() bool {
			if !cap.take() {
				return false
			}
			mu.Lock()
			order = append(order, label)
			mu.Unlock()
			return true
		})
	}
	heavy := &tenant.Tenant{Name: "heavy", Weight: 2}
	light := &tenant.Tenant{Name: "light", Weight: 1}
	vip := &tenant.Tenant{Name: "vip", Priority: 5}
	var waits []<-chan error
	for i := range 4 {
		waits = append(waits, ask(heavy, NoPriority, fmt.Sprintf("H%d", i)))
	}
	for i := range 2 {
		waits = append(waits, ask(light, NoPriority, fmt.Sprintf("L%d", i)))
	}
	waits = append(waits, ask(vip, 1, "V-lowered"))  // band 1: above 0, below 5
	waits = append(waits, ask(light, 7, "L-raised")) // stays in band 0
	waits = append(waits, ask(vip, NoPriority, "V"))
	for n := range waits {
		cap.release(1)
		q.Wake("m")
		if !poll.Within(5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == n+1 }) {
			t.Fatalf("no admission after %v", order)
		}
	}
	for _, w := range waits {
		if err := <-w; err != nil {
			t.Errorf("Admit: %v", err)
		}
	}
	// Band 0: heavy's tags 0.5, 1, 1.5, 2; light's 1, 2, 3 (L-raised).
	want := []string{"V", "V-lowered", "H0", "H1", "L0", "H2", "H3", "L1", "L-raised"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("admitted %v; want %v", order, want)
	}
}

// TestCancelLeavesAtOnce: a waiter whose client went away is out of the
// queue without any capacity freeing or any Wake, and the others keep
// their order.
func TestCancelLeavesAtOnce(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	q := New(Options{Timeout: time.Minute, MaxWaiters: 8, Poll: time.Hour, Metrics: m})
	var cap slots
	a := queued(t, q, context.Background(), NoPriority, cap.take)
	ctx, cancel := context.WithCancel(context.Background())
	b := queued(t, q, ctx, NoPriority, cap.take)
	c := queued(t, q, context.Background(), NoPriority, cap.take)
	cancel()
	poll.Until(t, "the cancelled waiter to leave", func() bool { return q.Waiting() == 2 })
	if err := <-b; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Admit: %v; want context.Canceled", err)
	}
	if got := testutil.ToFloat64(m.Depth.WithLabelValues("0")); got != 2 {
		t.Errorf("llmgw_queue_waiting{band=0} %v; want 2", got)
	}
	if n := testutil.CollectAndCount(m.Wait); n != 1 {
		t.Errorf("wait series %d; want one (band 0, canceled)", n)
	}
	cap.release(1)
	q.Wake("m")
	if err := <-a; err != nil {
		t.Errorf("first waiter: %v", err)
	}
	cap.release(1)
	q.Wake("m")
	if err := <-c; err != nil {
		t.Errorf("third waiter: %v", err)
	}
	if q.Waiting() != 0 {
		t.Errorf("%d still waiting", q.Waiting())
	}
}

// TestCaps: over the per-tenant or the global cap a request is refused at
// once with a Retry-After of at least a second; the refusals are counted
// by band and reason.
func TestCaps(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	q := New(Options{Timeout: time.Minute, MaxWaiters: 2, MaxPerTenant: 1, Poll: time.Hour, Metrics: m})
	var cap slots
	a, b := &tenant.Tenant{Name: "a"}, &tenant.Tenant{Name: "b", Priority: 3}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w1 := queued(t, q, tenant.NewContext(ctx, a), NoPriority, cap.take)
	tests := []struct {
		name   string
		who    *tenant.Tenant
		reason string
		band   string
	}{
		{"tenant cap", a, "tenant_queue_full", "0"},
		{"global cap", nil, "queue_full", "0"},
	}
	w2 := queued(t, q, tenant.NewContext(ctx, b), NoPriority, cap.take)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			who := tt.who
			if who == nil {
				who = &tenant.Tenant{Name: "c"}
			}
			err := q.Admit(tenant.NewContext(ctx, who), "m", NoPriority, cap.take)
			var rej *Rejected
			if !errors.As(err, &rej) || rej.Reason != tt.reason {
				t.Fatalf("Admit: %v; want a %s rejection", err, tt.reason)
			}
			if rej.RetryAfter < time.Second || rej.RetryAfter%time.Second != 0 {
				t.Errorf("RetryAfter %v; want whole seconds, at least 1", rej.RetryAfter)
			}
			if got := testutil.ToFloat64(m.Rejected.WithLabelValues(tt.band, tt.reason)); got != 1 {
				t.Errorf("llmgw_queue_rejected_total{%s,%s} = %v; want 1", tt.band, tt.reason, got)
			}
		})
	}
	if q.Waiting() != 2 {
		t.Errorf("%d waiting; want the two admitted to the queue", q.Waiting())
	}
	cancel()
	<-w1
	<-w2
}

// TestTimeoutAndNoQueue: a wait that runs out is refused with a
// Retry-After and leaves nothing behind; with no timeout there is no queue.
func TestTimeoutAndNoQueue(t *testing.T) {
	t.Parallel()
	var cap slots
	q := New(Options{Timeout: 20 * time.Millisecond, MaxWaiters: 8, Poll: time.Hour})
	err := q.Admit(context.Background(), "m", NoPriority, cap.take)
	var rej *Rejected
	if !errors.As(err, &rej) || rej.Reason != "timeout" || rej.RetryAfter < time.Second {
		t.Fatalf("Admit: %v (%+v); want a timeout rejection with Retry-After >= 1s", err, rej)
	}
	if q.Waiting() != 0 {
		t.Errorf("%d waiting after the timeout", q.Waiting())
	}
	tries := 0
	q = New(Options{MaxWaiters: 8})
	err = q.Admit(context.Background(), "m", NoPriority, func() bool { tries++; return false })
	if !errors.As(err, &rej) || rej.Reason != "no_queue" || rej.RetryAfter != time.Second || tries != 1 {
		t.Fatalf("Admit without a queue: %v after %d tries; want a no_queue rejection after one", err, tries)
	}
}

// TestPollTriesInOrder: capacity that appears without a Wake (engine
// metrics showing room) is found by the periodic retry, and it goes to
// the head, not to whoever polls first.
func TestPollTriesInOrder(t *testing.T) {
	t.Parallel()
	q := New(Options{Timeout: time.Minute, MaxWaiters: 8, Poll: 5 * time.Millisecond})
	var cap slots
	var mu sync.Mutex
	var order []int
	try := func(i int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			if !cap.take() {
				return false
			}
			order = append(order, i)
			return true
		}
	}
	light := &tenant.Tenant{Name: "light"}
	first := queued(t, q, context.Background(), NoPriority, try(1))
	second := queued(t, q, as(light), NoPriority, try(2))
	third := queued(t, q, context.Background(), NoPriority, try(3))
	cap.release(1)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	cap.release(2)
	<-second
	<-third
	if fmt.Sprint(order) != "[1 2 3]" {
		t.Errorf("admitted %v; want [1 2 3]: anonymous's tags 1, 2, light's 1 after it", order)
	}
}

// TestNoLostWake: a request whose try failed just before capacity freed
// (the Wake found nobody queued) gets another try when it joins, without
// waiting for the periodic retry.
func TestNoLostWake(t *testing.T) {
	t.Parallel()
	q := New(Options{Timeout: time.Minute, MaxWaiters: 8, Poll: time.Hour})
	var cap slots
	tries := 0
	err := q.Admit(context.Background(), "m", NoPriority, func() bool {
		tries++
		if tries == 1 { // the request ahead ends between this try and the join
			cap.release(1)
			q.Wake("m")
			return false
		}
		return cap.take()
	})
	if err != nil || tries != 2 {
		t.Errorf("Admit: %v after %d tries; want admitted on the second", err, tries)
	}
}

// TestRetryAfter: the estimate counts higher bands in full and the
// tenant's own queue at its share of its band, at the recent interval.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Now()
	p := &pool{interval: time.Second, lastAdmit: now}
	for i, who := range []struct {
		name string
		prio int
		n    int
	}{{"vip", 5, 3}, {"heavy", 0, 20}, {"light", 0, 2}} {
		for j := range who.n {
			p.push(&waiter{seq: uint64(i*100 + j)}, who.prio, &tenant.Tenant{Name: who.name}, false, nil)
		}
	}
	tests := []struct {
		name string
		prio int
		own  int
		want time.Duration
	}{
		{"vip", 5, 4, 4 * time.Second},           // only its own queue in its band
		{"light", 0, 3, (3 + 6) * time.Second},   // vip's 3, then 3 at half the band
		{"heavy", 0, 21, (3 + 23) * time.Second}, // vip's 3, then the whole band
		{"new", -1, 1, (3 + 22 + 1) * time.Second},
	}
	for _, tt := range tests {
		if got := p.estimate(time.Minute, now, tt.prio, 1, tt.name, tt.own); got != tt.want {
			t.Errorf("%s: %v; want %v", tt.name, got, tt.want)
		}
	}
	unseen := &pool{lastAdmit: now.Add(-time.Millisecond)}
	unseen.push(&waiter{}, 0, &tenant.Tenant{Name: "x"}, false, nil)
	if got := unseen.estimate(3*time.Second, now, 0, 1, "x", 1); got != 3*time.Second {
		t.Errorf("with no admission seen: %v; want the timeout", got)
	}
	p.lastAdmit = now.Add(-10 * time.Second)
	if got := p.estimate(time.Minute, now, 5, 1, "vip", 1); got != 10*time.Second {
		t.Errorf("10 s since the last admission: %v; want the open gap as the interval", got)
	}
}

// BenchmarkAdmitUncontended is what the queue adds to a request that finds
// a replica with room at once: the pool lookup and the waiter count.
func BenchmarkAdmitUncontended(b *testing.B) {
	q := New(Options{Timeout: 2 * time.Second, MaxWaiters: 1024})
	ctx := context.Background()
	n := 0
	try := func() bool { n++; return true }
	b.ReportAllocs()
	for b.Loop() {
		_ = q.Admit(ctx, "m", NoPriority, try)
	}
}

// TestOneTurnPerWake: a Wake lets one waiter try, even when more room
// freed; the next tries on the next Wake (in the router, the admitted
// request's start), when the load counts the one admitted.
func TestOneTurnPerWake(t *testing.T) {
	t.Parallel()
	q := New(Options{Timeout: time.Minute, MaxWaiters: 8, Poll: time.Hour})
	var cap slots
	var tries atomic.Int32
	try := func() bool { tries.Add(1); return cap.take() }
	first := queued(t, q, context.Background(), NoPriority, try)
	second := queued(t, q, context.Background(), NoPriority, try)
	tries.Store(0)
	cap.release(2)
	q.Wake("m")
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	holder := q.lookup("m").holder
	q.mu.Unlock()
	if holder != nil || tries.Load() != 1 {
		t.Fatalf("after one Wake: %d tries, a turn given: %v; want one try and no turn", tries.Load(), holder != nil)
	}
	q.Wake("m")
	if err := <-second; err != nil || tries.Load() != 2 {
		t.Errorf("second: %v after %d tries; want admitted on the second Wake", err, tries.Load())
	}
}
