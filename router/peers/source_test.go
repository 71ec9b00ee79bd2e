package peers

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// listing is a Lister over a fixed map, standing in for the routers
// Consul lists (the attack suite checks the server's, over real Consul).
type listing struct {
	mu    sync.Mutex
	known bool
	at    map[netip.Addr]int
}

func (l *listing) ListedAt(ip netip.Addr) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at[ip], l.known
}

// clientFrom posts from a chosen loopback source address.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{
		DialContext:       func(ctx context.Context, n, a string) (net.Conn, error) { return d.DialContext(ctx, n, a) },
		DisableKeepAlives: true,
	}}
}

func TestTableSourceChecks(t *testing.T) {
	t.Parallel()
	tab, tr, _ := newTestTable(t)
	lst := &listing{at: map[netip.Addr]int{netip.MustParseAddr("127.0.0.1"): 2, netip.MustParseAddr("127.0.0.3"): 1}}
	tab.SetLister(lst)
	srv := httptest.NewServer(tab)
	defer srv.Close()
	post := func(from, router string, seq, inFlight int) (int, string) {
		t.Helper()
		body := fmt.Sprintf(`{"version":1,"router":%q,"seq":%d,"replicas":[{"replica":"a","in_flight":%d}]}`, router, seq, inFlight)
		req, _ := http.NewRequest("POST", srv.URL+Path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := clientFrom(from).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	if code, body := post("127.0.0.1", "r1", 1, 1); code != 503 || !strings.Contains(body, "not been read yet") {
		t.Fatalf("before the list is read: %d %s; want 503", code, body)
	}
	lst.mu.Lock()
	lst.known = true
	lst.mu.Unlock()

	steps := []struct {
		name, from, router string
		seq, inFlight      int
		code               int
		says               string
		wantPeers, wantA   int
	}{
		{"listed address", "127.0.0.1", "r1", 1, 1, 204, "", 1, 1},
		{"second router there", "127.0.0.1", "r2", 1, 10, 204, "", 2, 11},
		{"unlisted address", "127.0.0.2", "r3", 1, 100, 403, "source 127.0.0.2 is not the address of a router", 2, 11},
		{"known id, other listed address", "127.0.0.3", "r1", 2, 100, 403, "reported from 127.0.0.1 before", 2, 11},
		// A third id where two routers are listed: the least recently
		// heard (r1) makes room, as for a restarted router.
		{"third id replaces the oldest", "127.0.0.1", "r4", 1, 1000, 204, "", 2, 1010},
	}
	for _, s := range steps {
		code, body := post(s.from, s.router, s.seq, s.inFlight)
		if code != s.code || !strings.Contains(body, s.says) {
			t.Fatalf("%s: %d %q; want %d saying %q", s.name, code, body, s.code, s.says)
		}
		if got := tab.Peers(); got != s.wantPeers {
			t.Fatalf("%s: %d peers; want %d", s.name, got, s.wantPeers)
		}
		if got := tr.Load("a").InFlight; got != s.wantA {
			t.Fatalf("%s: peers' in flight on a = %d; want %d", s.name, got, s.wantA)
		}
	}
	if st := tab.Stats(); st.Unlisted != 3 || st.Replaced != 1 || st.Accepted != 3 || st.Rejected != 0 {
		t.Fatalf("stats %+v; want 3 unlisted, 1 replaced, 3 accepted, 0 rejected", st)
	}
}

// TestTableBoundedUnderAFloodOfIDs posts ten thousand router ids from
// one listed address; the table holds as many as are listed there.
func TestTableBoundedUnderAFloodOfIDs(t *testing.T) {
	t.Parallel()
	tab, tr, _ := newTestTable(t)
	ip := netip.MustParseAddr("10.0.0.7")
	tab.SetLister(&listing{known: true, at: map[netip.Addr]int{ip: 3}})
	for i := range 10_000 {
		if _, err := tab.put(msg(fmt.Sprintf("fake/%d", i), 1, Replica{ID: "a", InFlight: 1}), ip, true); err != nil {
			t.Fatalf("id %d: %v", i, err)
		}
	}
	if got := tab.Peers(); got != 3 {
		t.Fatalf("%d peers after 10,000 ids from one address listing 3 routers; want 3", got)
	}
	if got := tr.Load("a").InFlight; got != 3 {
		t.Fatalf("peers' in flight %d; want 3 (one per entry held)", got)
	}
}

// TestTableBoundedWithoutLister: with no list to bound it, the table
// holds MaxPeers and refuses the next id until one expires.
func TestTableBoundedWithoutLister(t *testing.T) {
	t.Parallel()
	tab, _, now := newTestTable(t)
	ip := netip.MustParseAddr("10.0.0.7")
	for i := range MaxPeers {
		if _, err := tab.put(msg(fmt.Sprintf("p/%d", i), 1), ip, true); err != nil {
			t.Fatalf("peer %d: %v", i, err)
		}
	}
	_, err := tab.put(msg("one-more", 1), ip, true)
	if err == nil || !strings.Contains(err.Error(), "peer table full") {
		t.Fatalf("peer %d: %v; want the table full", MaxPeers+1, err)
	}
	if _, err := tab.put(msg("p/0", 2), ip, true); err != nil {
		t.Fatalf("a held peer's next message: %v", err)
	}
	*now = now.Add(tab.expiry + 1)
	if gone := tab.Expire(); len(gone) != MaxPeers {
		t.Fatalf("%d expired; want %d", len(gone), MaxPeers)
	}
	if _, err := tab.put(msg("one-more", 1), ip, true); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
}
