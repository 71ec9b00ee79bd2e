package kvevents

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/poll"
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

// testRouter is a real HTTP server running kvwire's Receiver into a
// Mirror; swap replaces both, as a router restart does.
type testRouter struct {
	srv     *httptest.Server
	mu      sync.Mutex
	mirror  *kvwire.Mirror
	handler http.Handler
	down    atomic.Bool // answer 503, as an overloaded or starting router
}

func startRouter(t *testing.T, token string) *testRouter {
	t.Helper()
	r := &testRouter{}
	r.swap(t, token)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/health" { // for Consul's HTTP check
			w.WriteHeader(http.StatusOK)
			return
		}
		if r.down.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		r.mu.Lock()
		h := r.handler
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *testRouter) swap(t *testing.T, token string) {
	t.Helper()
	m := kvwire.NewMirror()
	rec, err := kvwire.NewReceiver(token, m)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.mirror, r.handler = m, rec
	r.mu.Unlock()
}

func (r *testRouter) blocks(replica string) []Block {
	r.mu.Lock()
	m := r.mirror
	r.mu.Unlock()
	var out []Block
	for _, b := range m.Blocks("node-1", replica) {
		out = append(out, Block{Rank: b.Rank, Tier: b.Tier, Key: blockkey.Key(b.Key), Group: b.Group})
	}
	return sortBlocks(out)
}

func (r *testRouter) endpoint(id string) RouterEndpoint {
	return RouterEndpoint{ID: id, URL: r.srv.URL}
}

func forwarder(t *testing.T, s *Store, src RouterSource, token string) *Forwarder {
	t.Helper()
	f, err := StartForwarder(s, src, ForwarderConfig{
		DriverID: "node-1", Token: token, FlushInterval: 10 * time.Millisecond,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func waitMirror(t *testing.T, r *testRouter, s *Store, replica string) {
	t.Helper()
	poll.Until(t, "router mirror to match the store", func() bool {
		return slices.Equal(r.blocks(replica), s.Blocks(replica))
	})
}

func TestForwarderSnapshotThenDeltas(t *testing.T) {
	s := NewStore()
	tk := toks(0, 64)
	apply(s, "a", 0, stored([]uint64{1, 2}, nil, tk[:8], 4))
	r := startRouter(t, "secret")
	f := forwarder(t, s, newStaticRouters(r.endpoint("r1")), "secret")
	waitMirror(t, r, s, "a")

	apply(s, "a", 0, stored([]uint64{3}, u64(2), tk[8:12], 4), removed(MediumGPU, 1))
	apply(s, "b", 1, stored([]uint64{1}, nil, tk[:4], 4))
	waitMirror(t, r, s, "a")
	waitMirror(t, r, s, "b")

	s.Remove("a")
	poll.Until(t, "Remove to reach the router", func() bool { return len(r.blocks("a")) == 0 })
	// Sends are counted after the router's answer: wait for the count.
	poll.Until(t, "deltas counted", func() bool { st := first(f); return st.Sent >= 3 && st.Synced })
	if st := f.Status(); len(st) != 1 || st[0].Snapshots != 1 || st[0].Failures != 0 {
		t.Errorf("status %+v; want one snapshot, then deltas only", st)
	}
}

func TestForwarderResendsSnapshotAfterRouterRestart(t *testing.T) {
	s := NewStore()
	tk := toks(0, 64)
	apply(s, "a", 0, stored([]uint64{1, 2}, nil, tk[:8], 4))
	r := startRouter(t, "secret")
	f := forwarder(t, s, newStaticRouters(r.endpoint("r1")), "secret")
	waitMirror(t, r, s, "a")

	r.swap(t, "secret") // the router restarts with empty state
	apply(s, "a", 0, stored([]uint64{3}, u64(2), tk[8:12], 4))
	waitMirror(t, r, s, "a")
	// The router applies the snapshot before it answers, and the session
	// counts it after the answer.
	poll.Until(t, "the second snapshot counted", func() bool { return first(f).Snapshots == 2 })
}

func TestForwarderRetriesWithBackoff(t *testing.T) {
	s := NewStore()
	tk := toks(0, 64)
	r := startRouter(t, "secret")
	r.down.Store(true)
	f := forwarder(t, s, newStaticRouters(r.endpoint("r1")), "secret")
	apply(s, "a", 0, stored([]uint64{1}, nil, tk[:4], 4))
	poll.Until(t, "failed sends", func() bool { return first(f).Failures >= 3 })
	r.down.Store(false)
	waitMirror(t, r, s, "a")
}

func TestForwarderWrongToken(t *testing.T) {
	s := NewStore()
	apply(s, "a", 0, stored([]uint64{1}, nil, toks(0, 4), 4))
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
	s := NewStore()
	apply(s, "a", 0, stored([]uint64{1}, nil, toks(0, 4), 4))
	r1, r2 := startRouter(t, "secret"), startRouter(t, "secret")
	src := newStaticRouters(r1.endpoint("r1"))
	f := forwarder(t, s, src, "secret")
	waitMirror(t, r1, s, "a")

	src.Set(r1.endpoint("r1"), r2.endpoint("r2"))
	waitMirror(t, r2, s, "a")
	src.Set(r2.endpoint("r2"))
	poll.Until(t, "r1's session to stop", func() bool { st := f.Status(); return len(st) == 1 && st[0].ID == "r2" })
	apply(s, "a", 0, removed(MediumGPU, 1))
	poll.Until(t, "r2 to see the removal", func() bool { return len(r2.blocks("a")) == 0 })
}

// TestStalledRouterDoesNotBlockIntake holds one router's answers until the
// test ends while intake and the other router carry on.
func TestStalledRouterDoesNotBlockIntake(t *testing.T) {
	s := NewStore(WithMaxLag(chunkSize))
	release := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		<-release
	}))
	defer stalled.Close()
	defer close(release)
	live := startRouter(t, "secret")
	f := forwarder(t, s, newStaticRouters(RouterEndpoint{ID: "stalled", URL: stalled.URL}, live.endpoint("live")), "secret")
	defer f.Close()
	for i := range uint64(4 * chunkSize) {
		apply(s, "a", 0, stored([]uint64{i}, nil, toks(int(i)*4, 4), 4))
	}
	waitMirror(t, live, s, "a")
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
	s := NewStore()
	apply(s, "a", 0, stored([]uint64{1, 2}, nil, toks(0, 8), 4))
	r := startRouter(t, "secret")
	src := newStaticRouters(r.endpoint("r1"))
	f, err := StartForwarder(s, src, ForwarderConfig{DriverID: "node-1", Token: "secret",
		FlushInterval: 10 * time.Millisecond, KeepAlive: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	waitMirror(t, r, s, "a") // not ready, and still sent its snapshot
	r.swap(t, "secret")
	ready := r.endpoint("r1")
	ready.Ready = true
	src.Set(ready)
	waitMirror(t, r, s, "a")
	poll.Until(t, "the second snapshot counted", func() bool { return first(f).Snapshots == 2 })
	src.Set(ready) // ready already: no snapshot more
	apply(s, "a", 0, removed(MediumGPU, 2))
	waitMirror(t, r, s, "a")
	if st := first(f); st.Snapshots != 2 {
		t.Errorf("status %+v; want no third snapshot while the router stays ready", st)
	}
}

// TestForwarderJoinsRouterOnceItListens: Nomad registers a router before
// its task starts, so the first sends fail; however long that lasts, the
// router gets its snapshot within JoinBackoff of listening, not after a
// backoff grown towards MaxBackoff (an hour here).
func TestForwarderJoinsRouterOnceItListens(t *testing.T) {
	s := NewStore()
	apply(s, "a", 0, stored([]uint64{1}, nil, toks(0, 4), 4))
	r := startRouter(t, "secret")
	r.down.Store(true)
	f, err := StartForwarder(s, newStaticRouters(r.endpoint("r1")), ForwarderConfig{DriverID: "node-1", Token: "secret",
		FlushInterval: 10 * time.Millisecond, MinBackoff: 5 * time.Millisecond, MaxBackoff: time.Hour,
		JoinBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Doubling from 5 ms, the 14th retry would wait 80 s without the cap.
	poll.Until(t, "14 failed sends", func() bool { return first(f).Failures >= 14 })
	r.down.Store(false)
	waitMirror(t, r, s, "a")
}
