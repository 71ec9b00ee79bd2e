package peers

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/load"
)

// peer is a router's receiving side for publisher tests: its tracker and
// its table behind a real HTTP server.
type peer struct {
	tracker *load.Tracker
	table   *Table
	srv     *httptest.Server
}

func newPeer(t *testing.T, id, token string) *peer {
	t.Helper()
	// Draining off in these tests: they compare exact prefill counts, and a
	// publisher reports its own drained as time passes (router/load).
	tr := load.NewTracker(load.WithPrefillRate(0))
	tab, err := NewTable(id, token, tr, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(tab)
	t.Cleanup(srv.Close)
	return &peer{tracker: tr, table: tab, srv: srv}
}

// targets is a settable peer list, as the Consul watch would give.
type targets struct {
	mu sync.Mutex
	l  []Target
}

func (ts *targets) set(l ...Target) { ts.mu.Lock(); ts.l = l; ts.mu.Unlock() }
func (ts *targets) get() []Target   { ts.mu.Lock(); defer ts.mu.Unlock(); return ts.l }

// TestMain fails the package if a publisher leaves a goroutine behind
// (posts, idle connections) once every test and its cleanup has run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPublisherSendsChangesToEveryPeer(t *testing.T) {
	t.Parallel()
	own := load.NewTracker(load.WithPrefillRate(0))
	b, c := newPeer(t, "b", "secret"), newPeer(t, "c", "secret")
	bad := newPeer(t, "d", "other-token") // rejects our token
	var ts targets
	ts.set(Target{ID: "b", URL: b.srv.URL}, Target{ID: "d", URL: bad.srv.URL})
	p, err := StartPublisher(context.Background(), PublisherOptions{
		Self: "a", Token: "secret", Interval: 5 * time.Millisecond, KeepAlive: time.Hour,
		Own: own.Own, Targets: ts.get,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	_, end := own.BeginPrefill("r1", 2000, 1500)
	want := load.Peer{InFlight: 1, InFlightTokens: 2000, PrefillTokens: 1500}
	poll.Until(t, "b to count a's request", func() bool { return b.tracker.PeerLoad("r1") == want })

	// A peer that joins later gets the current load without a change.
	ts.set(Target{ID: "b", URL: b.srv.URL}, Target{ID: "c", URL: c.srv.URL}, Target{ID: "d", URL: bad.srv.URL})
	poll.Until(t, "c, joining later, to count a's request", func() bool { return c.tracker.PeerLoad("r1") == want })

	end()
	poll.Until(t, "b and c to see the request end", func() bool {
		return b.tracker.Load("r1") == (load.Load{}) && c.tracker.Load("r1") == (load.Load{})
	})
	if st := bad.table.Stats(); st.Accepted != 0 || st.Rejected == 0 {
		t.Fatalf("the peer with another token counted %+v; want none accepted and some rejected", st)
	}
	if bad.tracker.Load("r1") != (load.Load{}) {
		t.Fatal("a peer that refused the token counted the load")
	}

	// Closing says goodbye: the peers count nothing from a at once,
	// although a had a request in flight and their expiry is a minute.
	_, end = own.BeginPrefill("r2", 100, 100)
	defer end()
	poll.Until(t, "b to count the request to r2", func() bool { return b.tracker.Load("r2").InFlight == 1 })
	p.Close()
	if l := b.tracker.Load("r2"); l != (load.Load{}) {
		t.Fatalf("b's load of r2 after a closed = %+v; want none", l)
	}
}

func TestStartPublisherNeedsItsOptions(t *testing.T) {
	t.Parallel()
	own := load.NewTracker(load.WithPrefillRate(0))
	for _, o := range []PublisherOptions{
		{Token: "t", Own: own.Own, Targets: func() []Target { return nil }},
		{Self: "a", Own: own.Own, Targets: func() []Target { return nil }},
		{Self: "a", Token: "t", Targets: func() []Target { return nil }},
		{Self: "a", Token: "t", Own: own.Own},
	} {
		if p, err := StartPublisher(context.Background(), o); err == nil {
			p.Close()
			t.Errorf("StartPublisher(%+v) started", o)
		}
	}
}

// TestPublisherKeepsToItsRate: with ten peers and a budget of 200
// messages a second, a publisher whose load changes at every 1 ms tick
// makes a message at most every 50 ms, and every peer still gets the
// load. The bound counts messages against the time that passed, so a slow
// machine only makes fewer.
func TestPublisherKeepsToItsRate(t *testing.T) {
	t.Parallel()
	var ts targets
	var ps []*peer
	var l []Target
	for i := range 10 {
		p := newPeer(t, fmt.Sprintf("p%d", i), "secret")
		ps = append(ps, p)
		l = append(l, Target{ID: fmt.Sprintf("p%d", i), URL: p.srv.URL})
	}
	ts.set(l...)
	var n atomic.Int64
	own := func() map[string]load.Peer { // a change at every call
		return map[string]load.Peer{"r1": {InFlight: 1, InFlightTokens: int(n.Add(1))}}
	}
	start := time.Now()
	p, err := StartPublisher(context.Background(), PublisherOptions{
		Self: "a", Token: "secret", Interval: time.Millisecond, KeepAlive: time.Hour, MaxRate: 200,
		Own: own, Targets: ts.get,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range ps {
		poll.Until(t, "every peer to count a's request", func() bool { return q.tracker.PeerLoad("r1").InFlight == 1 })
	}
	poll.Until(t, "a few messages", func() bool { return ps[0].table.Stats().Accepted >= 3 })
	p.Close()
	elapsed := time.Since(start)
	most := uint64(elapsed/(50*time.Millisecond)) + 2 // the first, the goodbye
	for i, q := range ps {
		if got := q.table.Stats().Accepted; got > most {
			t.Errorf("peer %d accepted %d messages in %s; the budget allows %d", i, got, elapsed, most)
		}
	}
	if calls := n.Load(); calls < 3 {
		t.Fatalf("own load read %d times", calls)
	}
}

// TestPeriod pins the publisher's pacing while its load keeps changing:
// every interval up to MaxRate × Interval peers, then the rate budget's
// gap rounded up to whole intervals, never past KeepAlive.
func TestPeriod(t *testing.T) {
	cases := []struct {
		opts  PublisherOptions
		peers int
		want  time.Duration
	}{
		{PublisherOptions{}, 0, 50 * time.Millisecond},
		{PublisherOptions{}, 1, 50 * time.Millisecond},
		{PublisherOptions{}, 5, 50 * time.Millisecond},
		{PublisherOptions{}, 6, 100 * time.Millisecond}, // 60 ms gap
		{PublisherOptions{}, 15, 150 * time.Millisecond},
		{PublisherOptions{}, 31, 350 * time.Millisecond}, // 310 ms gap
		{PublisherOptions{}, 200, time.Second},           // KeepAlive bounds the gap
		{PublisherOptions{MaxRate: -1}, 31, 50 * time.Millisecond},
		{PublisherOptions{Interval: 100 * time.Millisecond, MaxRate: 50}, 7, 200 * time.Millisecond},
		{PublisherOptions{KeepAlive: 500 * time.Millisecond}, 200, 500 * time.Millisecond},
	}
	for _, c := range cases {
		if got := c.opts.Period(c.peers); got != c.want {
			t.Errorf("%+v.Period(%d) = %v; want %v", c.opts, c.peers, got, c.want)
		}
	}
}
