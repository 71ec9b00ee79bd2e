package peers

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/load"
)

func newTestTable(t *testing.T) (*Table, *load.Tracker, *time.Time) {
	t.Helper()
	tr := load.NewTracker(load.WithPrefillRate(0))
	tab, err := NewTable("self", "secret", tr, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	tab.now = func() time.Time { return now }
	return tab, tr, &now
}

func msg(router string, seq uint64, reps ...Replica) Message {
	return Message{Version: Version, Router: router, Seq: seq, Replicas: reps}
}

func TestTableSumsPeersIntoTheTracker(t *testing.T) {
	t.Parallel()
	tab, tr, now := newTestTable(t)
	_, end := tr.BeginPrefill("a", 1000, 600) // this router's own request
	defer end()

	tab.Put(msg("r1", 1, Replica{ID: "a", InFlight: 2, InFlightTokens: 3000, PrefillTokens: 1000}))
	tab.Put(msg("r2", 5, Replica{ID: "a", InFlight: 1, InFlightTokens: 500}, Replica{ID: "b", InFlight: 4}))
	if got, want := tr.Load("a"), (load.Load{InFlight: 4, InFlightTokens: 4500, PrefillTokens: 1600}); got != want {
		t.Fatalf("load of a = %+v; want %+v", got, want)
	}
	if got, want := tr.PeerLoad("a"), (load.Peer{InFlight: 3, InFlightTokens: 3500, PrefillTokens: 1000}); got != want {
		t.Fatalf("peers' load of a = %+v; want %+v", got, want)
	}
	if got := tr.Load("b").InFlight; got != 4 {
		t.Fatalf("b's in flight = %d; want r2's 4", got)
	}
	// Own excludes the peers: it is what this router reports.
	if own := tr.Own(); len(own) != 1 || own["a"] != (load.Peer{InFlight: 1, InFlightTokens: 1000, PrefillTokens: 600}) {
		t.Fatalf("Own() = %+v; want only this router's request to a", own)
	}

	// A newer message replaces the peer's whole state: b is gone.
	tab.Put(msg("r2", 6, Replica{ID: "a", InFlight: 1}))
	if got := tr.Load("b").InFlight; got != 0 {
		t.Fatalf("b's in flight = %d after r2 stopped listing it; want 0", got)
	}
	// An older one, and one from this router itself, change nothing.
	if tab.Put(msg("r2", 4, Replica{ID: "b", InFlight: 9})) || tab.Put(msg("self", 99, Replica{ID: "b", InFlight: 9})) {
		t.Fatal("Put accepted a stale message or the router's own")
	}
	if st := tab.Stats(); st.Stale != 1 || st.Own != 1 {
		t.Fatalf("stats %+v; want one stale message and one of the router's own", st)
	}
	if got := tr.Load("b").InFlight; got != 0 {
		t.Fatalf("b's in flight = %d after a stale message; want 0", got)
	}

	// r1 falls silent: after the expiry its requests no longer count.
	*now = now.Add(2 * time.Second)
	tab.Put(msg("r2", 7, Replica{ID: "a", InFlight: 1}))
	*now = now.Add(2 * time.Second)
	if gone := tab.Expire(); len(gone) != 1 || gone[0] != "r1" {
		t.Fatalf("Expire() = %v; want [r1]", gone)
	}
	if got, peer := tr.Load("a"), tr.PeerLoad("a"); peer != (load.Peer{InFlight: 1}) || got.InFlight != 2 {
		t.Fatalf("load of a after r1 expired = %+v (peers %+v); want r2's 1 plus the own 1", got, peer)
	}
	if tab.Peers() != 1 {
		t.Fatalf("Peers() = %d; want 1", tab.Peers())
	}
}

func TestTableCarriesPeerLoadToReplicasTrackedLater(t *testing.T) {
	t.Parallel()
	tab, tr, _ := newTestTable(t)
	tab.Put(msg("r1", 1, Replica{ID: "new", InFlight: 2}))
	_, end := tr.BeginPrefill("new", 10, 0) // the entry is made after the report
	defer end()
	var got [2]load.Load
	tr.Read(func(l load.Locked) { got[0], got[1] = l.Load("new"), l.Load("unknown") })
	if got[0].InFlight != 3 || got[1] != (load.Load{}) {
		t.Fatalf("loads read %+v, %+v; want 3 in flight on new, nothing on unknown", got[0], got[1])
	}
}

func TestTableServeHTTP(t *testing.T) {
	t.Parallel()
	tab, tr, _ := newTestTable(t)
	srv := httptest.NewServer(tab)
	defer srv.Close()
	post := func(method, auth, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+Path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	good := `{"version":1,"router":"r1","seq":1,"replicas":[{"replica":"a","in_flight":2}]}`
	cases := []struct {
		name, method, auth, body string
		code                     int
		says                     string
	}{
		{"no token", "POST", "", good, 401, "missing or wrong bearer token"},
		{"wrong token", "POST", "Bearer nope", good, 401, "missing or wrong bearer token"},
		{"GET", "GET", "Bearer secret", "", 405, "use POST"},
		{"malformed", "POST", "Bearer secret", `{"version":1,"router":"r1","replicas":[{"replica":"a","in_flight":-2}]}`, 400, "in_flight -2 out of range"},
		{"too large", "POST", "Bearer secret", `{"version":1,"router":"` + strings.Repeat("x", MaxBody) + `"}`, 413, "request body too large"},
		{"accepted", "POST", "Bearer secret", good, 204, ""},
	}
	for _, c := range cases {
		code, body := post(c.method, c.auth, c.body)
		if code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("%s: answered %d %q; want %d saying %q", c.name, code, body, c.code, c.says)
		}
		if c.code != 204 && tr.Load("a").InFlight != 0 {
			t.Fatalf("%s: a rejected message changed the load", c.name)
		}
	}
	if got := tr.Load("a").InFlight; got != 2 {
		t.Fatalf("in flight on a = %d after the accepted message; want 2", got)
	}
	if st := tab.Stats(); st.Accepted != 1 || st.Rejected != 5 {
		t.Fatalf("stats %+v; want 1 accepted and 5 rejected", st)
	}
}

func TestNewTableRejectsBadOptions(t *testing.T) {
	t.Parallel()
	tr := load.NewTracker(load.WithPrefillRate(0))
	for _, c := range []struct {
		self, token string
		expiry      time.Duration
		err         string
	}{
		{"", "t", time.Second, "empty instance id"},
		{"s", "", time.Second, "empty shared token"},
		{"s", "t", 0, "expiry 0s must be positive"},
	} {
		if _, err := NewTable(c.self, c.token, tr, c.expiry); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("NewTable(%q, %q, %s) error %v; want %q", c.self, c.token, c.expiry, err, c.err)
		}
	}
}
