package forward

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// staticRouters is a RouterSource set by the test.
type staticRouters struct {
	mu      sync.Mutex
	set     []RouterEndpoint
	changed chan struct{}
}

func newStaticRouters(eps ...RouterEndpoint) *staticRouters {
	return &staticRouters{set: eps, changed: make(chan struct{}, 1)}
}

func (s *staticRouters) Changed() <-chan struct{} { return s.changed }

func (s *staticRouters) Current() []RouterEndpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.set)
}

func (s *staticRouters) Set(eps ...RouterEndpoint) {
	s.mu.Lock()
	s.set = eps
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// testRouter is kvtest's router, as this driver ("node-1") sees it.
type testRouter struct{ *kvtest.Router }

func startRouter(t *testing.T, token string) *testRouter {
	return &testRouter{kvtest.StartRouter(t, token)}
}

func (r *testRouter) blocks(replica string) []kvevents.Block { return r.Blocks("node-1", replica) }

func (r *testRouter) endpoint(id string) RouterEndpoint {
	return RouterEndpoint{ID: id, URL: r.URL()}
}

func forwarder(t *testing.T, s *kvevents.Store, src RouterSource, token string) *Forwarder {
	t.Helper()
	f, err := Start(s, src, Config{
		DriverID: "node-1", Token: token, FlushInterval: 10 * time.Millisecond,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func waitMirror(t *testing.T, r *testRouter, s *kvevents.Store, replica string) {
	t.Helper()
	kvtest.WaitMirror(t, r.Router, "node-1", s, replica)
}

func TestForwarderSnapshotThenDeltas(t *testing.T) {
	s := kvevents.NewStore()
	tk := kvtest.Toks(0, 64)
	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{1, 2}, nil, tk[:8], 4))
	r := startRouter(t, "secret")
	f := forwarder(t, s, newStaticRouters(r.endpoint("r1")), "secret")
	waitMirror(t, r, s, "a")

	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{3}, kvtest.U64(2), tk[8:12], 4), kvtest.Removed(kvevents.MediumGPU, 1))
	kvtest.Apply(s, "b", 1, kvtest.Stored([]uint64{1}, nil, tk[:4], 4))
	waitMirror(t, r, s, "a")
	waitMirror(t, r, s, "b")

	s.Remove("a")
	poll.Until(t, "Remove to reach the router", func() bool { return len(r.blocks("a")) == 0 })
	// Sends are counted after the router's answer: wait for the count.
	poll.Until(t, "deltas counted", func() bool { st := first(f); return st.Sent >= 3 && st.Synced })
	if st := f.Status(); len(st) != 1 || st[0].Snapshots != 1 || st[0].Failures != 0 {
		t.Errorf("%d sessions, the first %s; want one snapshot, then deltas only", len(st), counts(first(f)))
	}
}

func TestForwarderResendsSnapshotAfterRouterRestart(t *testing.T) {
	s := kvevents.NewStore()
	tk := kvtest.Toks(0, 64)
	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{1, 2}, nil, tk[:8], 4))
	r := startRouter(t, "secret")
	f := forwarder(t, s, newStaticRouters(r.endpoint("r1")), "secret")
	waitMirror(t, r, s, "a")

	r.Swap(t, "secret") // the router restarts with empty state
	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{3}, kvtest.U64(2), tk[8:12], 4))
	waitMirror(t, r, s, "a")
	// The router applies the snapshot before it answers, and the session
	// counts it after the answer.
	poll.Until(t, "the second snapshot counted", func() bool { return first(f).Snapshots == 2 })
}

func TestForwarderRetriesWithBackoff(t *testing.T) {
	s := kvevents.NewStore()
	tk := kvtest.Toks(0, 64)
	r := startRouter(t, "secret")
	r.Down.Store(true)
	f := forwarder(t, s, newStaticRouters(r.endpoint("r1")), "secret")
	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{1}, nil, tk[:4], 4))
	poll.Until(t, "failed sends", func() bool { return first(f).Failures >= 3 })
	r.Down.Store(false)
	waitMirror(t, r, s, "a")
}

func TestForwarderWrongToken(t *testing.T) {
	s := kvevents.NewStore()
	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{1}, nil, kvtest.Toks(0, 4), 4))
	r := startRouter(t, "secret")
	f := forwarder(t, s, newStaticRouters(r.endpoint("r1")), "guess")
	poll.Until(t, "a rejected send", func() bool { return first(f).Failures > 0 })
	if err := first(f).LastError; !errors.Is(err, kvwire.ErrUnauthorized) {
		t.Errorf("last error %v; want ErrUnauthorized", err)
	}
	if got := r.blocks("a"); len(got) != 0 {
		t.Errorf("router holds %v from an unauthenticated driver", got)
	}
}

func TestForwarderFollowsRouterSet(t *testing.T) {
	s := kvevents.NewStore()
	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{1}, nil, kvtest.Toks(0, 4), 4))
	r1, r2 := startRouter(t, "secret"), startRouter(t, "secret")
	src := newStaticRouters(r1.endpoint("r1"))
	f := forwarder(t, s, src, "secret")
	waitMirror(t, r1, s, "a")

	src.Set(r1.endpoint("r1"), r2.endpoint("r2"))
	waitMirror(t, r2, s, "a")
	src.Set(r2.endpoint("r2"))
	poll.Until(t, "r1's session to stop", func() bool { st := f.Status(); return len(st) == 1 && st[0].ID == "r2" })
	kvtest.Apply(s, "a", 0, kvtest.Removed(kvevents.MediumGPU, 1))
	poll.Until(t, "r2 to see the removal", func() bool { return len(r2.blocks("a")) == 0 })
}

// logChunk is the size of the store's change-log chunks (4,096 changes),
// which it trims whole.
const logChunk = 4096

// TestStalledRouterDoesNotBlockIntake holds one router's answers until the
// test ends while intake and the other router carry on.
func TestStalledRouterDoesNotBlockIntake(t *testing.T) {
	s := kvevents.NewStore(kvevents.WithMaxLag(logChunk))
	release := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		<-release
	}))
	defer stalled.Close()
	defer close(release)
	live := startRouter(t, "secret")
	f := forwarder(t, s, newStaticRouters(RouterEndpoint{ID: "stalled", URL: stalled.URL}, live.endpoint("live")), "secret")
	defer f.Close()
	for i := range uint64(4 * logChunk) {
		kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{i}, nil, kvtest.Toks(int(i)*4, 4), 4))
	}
	waitMirror(t, live, s, "a")
}

// counts shows a session's counters for a failure message; %v would show
// only the router, through RouterEndpoint's String.
func counts(st RouterStatus) string {
	return fmt.Sprintf("%s: %d sent, %d snapshots, %d failures, ready %v, last error %v", st.ID, st.Sent, st.Snapshots, st.Failures, st.Ready, st.LastError)
}

// first returns the first session's status, or a zero one before any
// session started.
func first(f *Forwarder) RouterStatus {
	st := f.Status()
	if len(st) == 0 {
		return RouterStatus{}
	}
	return st[0]
}

// TestForwarderResyncsRouterThatTurnsReady: a router whose check passes
// again may be a new process behind the same registration, holding
// nothing; with a keep-alive far away, only the turn to ready can bring
// it the snapshot.
func TestForwarderResyncsRouterThatTurnsReady(t *testing.T) {
	s := kvevents.NewStore()
	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{1, 2}, nil, kvtest.Toks(0, 8), 4))
	r := startRouter(t, "secret")
	src := newStaticRouters(r.endpoint("r1"))
	f, err := Start(s, src, Config{DriverID: "node-1", Token: "secret",
		FlushInterval: 10 * time.Millisecond, KeepAlive: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	waitMirror(t, r, s, "a") // not ready, and still sent its snapshot
	r.Swap(t, "secret")
	ready := r.endpoint("r1")
	ready.Ready = true
	src.Set(ready)
	waitMirror(t, r, s, "a")
	poll.Until(t, "the second snapshot counted", func() bool { return first(f).Snapshots == 2 })
	src.Set(ready) // ready already: no snapshot more
	kvtest.Apply(s, "a", 0, kvtest.Removed(kvevents.MediumGPU, 2))
	waitMirror(t, r, s, "a")
	if st := first(f); st.Snapshots != 2 {
		t.Errorf("session %s; want no third snapshot while the router stays ready", counts(st))
	}
}

// TestForwarderJoinsRouterOnceItListens: Nomad registers a router before
// its task starts, so the first sends fail; however long that lasts, the
// router gets its snapshot within JoinBackoff of listening, not after a
// backoff grown towards MaxBackoff (an hour here).
func TestForwarderJoinsRouterOnceItListens(t *testing.T) {
	s := kvevents.NewStore()
	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{1}, nil, kvtest.Toks(0, 4), 4))
	r := startRouter(t, "secret")
	r.Down.Store(true)
	f, err := Start(s, newStaticRouters(r.endpoint("r1")), Config{DriverID: "node-1", Token: "secret",
		FlushInterval: 10 * time.Millisecond, MinBackoff: 5 * time.Millisecond, MaxBackoff: time.Hour,
		JoinBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Doubling from 5 ms, the 14th retry would wait 80 s without the cap.
	poll.Until(t, "14 failed sends", func() bool { return first(f).Failures >= 14 })
	r.Down.Store(false)
	waitMirror(t, r, s, "a")
}
