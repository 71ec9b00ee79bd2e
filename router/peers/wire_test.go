package peers

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/load"
)

// startTestPublisher publishes own's load to ts every few milliseconds.
func startTestPublisher(t *testing.T, own *load.Tracker, ts *targets, jsonOnly bool) *Publisher {
	t.Helper()
	p, err := StartPublisher(context.Background(), PublisherOptions{
		Self: "a", Token: "secret", Interval: 5 * time.Millisecond, KeepAlive: time.Hour, MaxRate: -1,
		Own: own.Own, Targets: ts.get, JSONOnly: jsonOnly,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestPublisherMovesToTheCompactWire: the first message to a peer is
// JSON; its answer announces the compact wire, and what follows is
// compact, with the same loads counted. A publisher held to JSON (a
// router from before) is still read.
func TestPublisherMovesToTheCompactWire(t *testing.T) {
	t.Parallel()
	for _, jsonOnly := range []bool{false, true} {
		own := load.NewTracker(load.WithPrefillRate(0))
		b := newPeer(t, "b", "secret")
		var ts targets
		ts.set(Target{ID: "b", URL: b.srv.URL})
		startTestPublisher(t, own, &ts, jsonOnly)
		for i := range 3 {
			_, end := own.BeginPrefill("r1", 1000*(i+1), 10)
			want := load.Peer{InFlight: 1, InFlightTokens: 1000 * (i + 1), PrefillTokens: 10}
			poll.Until(t, "b to count a's request", func() bool { return b.tracker.PeerLoad("r1") == want })
			end()
			poll.Until(t, "b to see it end", func() bool { return b.tracker.PeerLoad("r1") == (load.Peer{}) })
		}
		st := b.table.Stats()
		if jsonOnly && (st.Compact != 0 || st.Accepted < 6) {
			t.Errorf("JSON only: %+v; want at least 6 accepted, none compact", st)
		}
		if !jsonOnly && (st.Compact == 0 || st.Compact < st.Accepted-1 || st.Rejected != 0) {
			t.Errorf("%+v; want every message after the first compact, none rejected", st)
		}
	}
}

// TestPublisherKeepsJSONForOldRouters: a router from before the compact
// wire answers without HeaderWire and refuses anything but JSON; it gets
// only JSON, and counts the load.
func TestPublisherKeepsJSONForOldRouters(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []Message
	var compact atomic.Int32
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, err := Decode(bytes.NewReader(body))
		if err != nil {
			compact.Add(1)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(old.Close)
	own := load.NewTracker(load.WithPrefillRate(0))
	var ts targets
	ts.set(Target{ID: "old", URL: old.URL})
	startTestPublisher(t, own, &ts, false)
	for i := range 3 {
		_, end := own.BeginPrefill("r1", 100, 1)
		poll.Until(t, "the old router to get the request", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) > 0 && len(got[len(got)-1].Replicas) == 1
		})
		end()
		poll.Until(t, "the old router to see it end", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got[len(got)-1].Replicas) == 0
		})
		if n := compact.Load(); n != 0 {
			t.Fatalf("round %d: the old router got %d messages it could not read", i, n)
		}
	}
}

// TestPublisherRestatesTheDirectory: a peer that restarts has lost the
// names it was sent; it answers 409 to a message that only indexes them,
// and the publisher sends them again, so the new table counts the load.
func TestPublisherRestatesTheDirectory(t *testing.T) {
	t.Parallel()
	var h atomic.Pointer[peer]
	first := newPeer(t, "b", "secret")
	h.Store(first)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.Load().table.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	own := load.NewTracker(load.WithPrefillRate(0))
	var ts targets
	ts.set(Target{ID: "b", URL: srv.URL})
	startTestPublisher(t, own, &ts, false)
	_, end := own.BeginPrefill("r1", 100, 1)
	defer end()
	poll.Until(t, "b to count the request", func() bool { return first.tracker.PeerLoad("r1").InFlight == 1 })
	_, end0 := own.BeginPrefill("r0", 100, 1) // a change: the next message is compact
	defer end0()
	poll.Until(t, "b to count the next on the compact wire", func() bool {
		return first.tracker.PeerLoad("r0").InFlight == 1 && first.table.Stats().Compact > 0
	})
	second := newPeer(t, "b", "secret") // b restarted
	h.Store(second)
	_, end2 := own.BeginPrefill("r2", 100, 1)
	defer end2()
	poll.Until(t, "the restarted b to count both requests", func() bool {
		return second.tracker.PeerLoad("r1").InFlight == 1 && second.tracker.PeerLoad("r2").InFlight == 1
	})
	if st := second.table.Stats(); st.Rejected == 0 || st.Compact == 0 {
		t.Errorf("restarted table: %+v; want the directory refused once, then compact messages", st)
	}
}

// TestPublisherReadsItsLoadOnlyWhenItMaySend: within the gap its rate
// budget sets, a tick sends nothing new, so it does not read the own
// load either (at thousands of replicas a read costs a millisecond).
func TestPublisherReadsItsLoadOnlyWhenItMaySend(t *testing.T) {
	t.Parallel()
	b := newPeer(t, "b", "secret")
	own := load.NewTracker(load.WithPrefillRate(0))
	_, end := own.BeginPrefill("r1", 100, 1)
	defer end()
	var reads, ticks atomic.Int64
	p, err := StartPublisher(context.Background(), PublisherOptions{
		Self: "a", Token: "secret", Interval: time.Millisecond, KeepAlive: time.Hour, MaxRate: 1, // one peer: a message a second
		Own:     func() map[string]load.Peer { reads.Add(1); return own.Own() },
		Targets: func() []Target { ticks.Add(1); return []Target{{ID: "b", URL: b.srv.URL}} },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	poll.Until(t, "200 ticks", func() bool { return ticks.Load() >= 200 })
	if r, n := reads.Load(), ticks.Load(); r > n/10 {
		t.Fatalf("%d reads of the own load in %d ticks; want at most one a second", r, n)
	}
	if got := b.tracker.PeerLoad("r1").InFlight; got != 1 {
		t.Fatalf("b counts %d in flight to r1; want the first message's 1", got)
	}
}
