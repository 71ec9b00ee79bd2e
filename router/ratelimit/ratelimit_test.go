package ratelimit

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/tenant"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTest() (*Limiter, *clock) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := New()
	l.now = c.now
	return l, c
}

func TestUnlimited(t *testing.T) {
	t.Parallel()
	l, _ := newTest()
	for range 1000 {
		g, s := l.Admit(tenant.Anonymous, 1e6, true)
		if !s.Allowed || g != nil {
			t.Fatalf("an unlimited tenant was limited: %+v", s)
		}
	}
	if len(l.Own()) != 0 {
		t.Errorf("unlimited tenants reach the peers: %v", l.Own())
	}
}

func TestRequestsPerSecond(t *testing.T) {
	t.Parallel()
	l, c := newTest()
	ten := &tenant.Tenant{Name: "a", Limits: tenant.Limits{RequestsPerSecond: 4}}
	for i := range 4 {
		g, s := l.Admit(ten, 0, false)
		if !s.Allowed {
			t.Fatalf("request %d refused: %+v", i, s)
		}
		g.Finish(-1)
		if s.Requests.Limit != 4 || s.Requests.Remaining != int64(3-i) {
			t.Errorf("request %d: window %+v", i, s.Requests)
		}
	}
	_, s := l.Admit(ten, 0, false)
	if s.Allowed || s.Limit != LimitRequests || s.RetryAfter != 250*time.Millisecond || s.Requests.Remaining != 0 || s.Requests.Reset != time.Second {
		t.Errorf("fifth request: %+v", s)
	}
	c.add(250 * time.Millisecond)
	if _, s := l.Admit(ten, 0, false); !s.Allowed {
		t.Errorf("after the retry-after: %+v", s)
	}
}

func TestTokensPerMinute(t *testing.T) {
	t.Parallel()
	l, c := newTest()
	ten := &tenant.Tenant{Name: "a", Limits: tenant.Limits{TokensPerMinute: 600}} // 10 per second
	g, s := l.Admit(ten, 500, false)
	if !s.Allowed || s.Tokens.Remaining != 100 || s.Tokens.Reset != 50*time.Second {
		t.Fatalf("first: %+v", s)
	}
	if _, s := l.Admit(ten, 200, false); s.Allowed || s.Limit != LimitTokens || s.RetryAfter != 10*time.Second {
		t.Errorf("over the budget: %+v", s)
	}
	g.Finish(100) // the response used 100 of the 500 charged
	if _, s := l.Admit(ten, 200, false); !s.Allowed || s.Tokens.Remaining != 300 {
		t.Errorf("after the usage correction: %+v", s)
	}
	if _, s := l.Admit(ten, 601, false); s.Allowed || s.Limit != LimitTooLarge || s.RetryAfter != 0 {
		t.Errorf("larger than a minute's budget: %+v", s)
	}
	c.add(time.Hour)
	if own := l.Own()["a"]; own.Requests != 2 || own.Tokens != 300 || own.InFlight != 1 {
		t.Errorf("own usage %+v", own)
	}
	// Idle tenants leave the reports; one in flight stays, however long.
	idle := &tenant.Tenant{Name: "idle", Limits: tenant.Limits{RequestsPerSecond: 5}}
	ig, _ := l.Admit(idle, 0, false)
	ig.Finish(-1)
	if _, ok := l.Own()["idle"]; !ok {
		t.Error("a tenant just used is not reported")
	}
	c.add(IdleAfter + time.Second)
	if own := l.Own(); len(own) != 1 || own["a"].InFlight != 1 {
		t.Errorf("after a minute idle: %v; want only a, in flight", own)
	}
}

func TestConcurrency(t *testing.T) {
	t.Parallel()
	l, _ := newTest()
	ten := &tenant.Tenant{Name: "a", Limits: tenant.Limits{MaxConcurrent: 2, MaxStreams: 1}}
	g1, s := l.Admit(ten, 0, true)
	if !s.Allowed {
		t.Fatal(s)
	}
	if _, s := l.Admit(ten, 0, true); s.Allowed || s.Limit != LimitStreams || s.RetryAfter <= 0 {
		t.Errorf("second stream: %+v", s)
	}
	g2, s := l.Admit(ten, 0, false)
	if !s.Allowed {
		t.Fatal(s)
	}
	if _, s := l.Admit(ten, 0, false); s.Allowed || s.Limit != LimitConcurrent {
		t.Errorf("third request: %+v", s)
	}
	g1.Finish(-1)
	g1.Finish(-1) // once only
	if g, s := l.Admit(ten, 0, true); !s.Allowed {
		t.Errorf("after a finish: %+v", s)
	} else {
		g.Finish(-1)
	}
	g2.Finish(-1)
	if own := l.Own()["a"]; own.InFlight != 0 || own.Streams != 0 {
		t.Errorf("in flight after every finish: %+v", own)
	}
}

func TestPeers(t *testing.T) {
	t.Parallel()
	l, c := newTest()
	ten := &tenant.Tenant{Name: "a", Limits: tenant.Limits{RequestsPerSecond: 10, MaxConcurrent: 5}}
	g, _ := l.Admit(ten, 0, false) // creates the state: 9 left
	defer g.Finish(-1)
	// The first report sets the peer's baseline, and its in-flight counts.
	l.SetPeer("r2", map[string]Usage{"a": {Requests: 1000, InFlight: 3}})
	if _, s := l.Admit(ten, 0, false); !s.Allowed || s.Requests.Remaining != 8 {
		t.Errorf("after the baseline: %+v", s)
	}
	// in flight: 2 own + 3 peer = 5 = MaxConcurrent.
	if _, s := l.Admit(ten, 0, false); s.Allowed || s.Limit != LimitConcurrent {
		t.Errorf("peer in-flight not counted: %+v", s)
	}
	// The next report's growth is charged: 8 more requests empty the bucket.
	l.SetPeer("r2", map[string]Usage{"a": {Requests: 1008, InFlight: 0}})
	if _, s := l.Admit(ten, 0, false); s.Allowed || s.Limit != LimitRequests {
		t.Errorf("peer admissions not charged: %+v", s)
	}
	c.add(time.Second)
	// A tenant's first appearance in a peer's reports is its baseline
	// (its in-flight counts count at once), its growth after is charged.
	l.SetPeer("r3", map[string]Usage{})
	l.SetPeer("r3", map[string]Usage{"a": {Requests: 1_000_000, InFlight: 5}})
	if _, s := l.Admit(ten, 0, false); s.Allowed || s.Limit != LimitConcurrent {
		t.Errorf("r3's requests in flight not counted: %+v", s)
	}
	l.SetPeer("r3", map[string]Usage{"a": {Requests: 1_000_010}})
	if _, s := l.Admit(ten, 0, false); s.Allowed || s.Limit != LimitRequests {
		t.Errorf("r3's new requests not charged: %+v", s)
	}
	l.ForgetPeer("r3")
	c.add(time.Second)
	if g, s := l.Admit(ten, 0, false); !s.Allowed {
		t.Errorf("after r3 left: %+v", s)
	} else {
		g.Finish(-1)
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	s := Status{Allowed: false, Limit: LimitTokens, RetryAfter: 1500 * time.Millisecond,
		Requests: Window{Limit: 10, Remaining: 3, Reset: 700 * time.Millisecond},
		Tokens:   Window{Limit: 60000, Remaining: 0, Reset: 6 * time.Minute}}
	h := http.Header{}
	s.SetHeaders(h)
	want := map[string]string{
		"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "700ms",
		"x-ratelimit-limit-tokens": "60000", "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "6m0s",
		"Retry-After": "2", "retry-after-ms": "1500",
	}
	for k, v := range want {
		if got := h[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %v, want %s", k, got, v)
		}
	}
	h = http.Header{}
	(&Status{Allowed: true}).SetHeaders(h)
	if len(h) != 0 {
		t.Errorf("unlimited status sets %v", h)
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {-time.Second, "0s"}, {time.Nanosecond, "1ms"}, {250 * time.Millisecond, "250ms"},
		{time.Second, "1s"}, {17500 * time.Millisecond, "17.5s"}, {6 * time.Minute, "6m0s"}, {90*time.Minute + 1, "1h30m0.001s"},
	} {
		if got := FormatReset(tc.d); got != tc.want {
			t.Errorf("FormatReset(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	for _, tc := range []struct {
		s    string
		want time.Duration
		err  string
	}{
		{"6m0s", 6 * time.Minute, ""}, {"1.5s", 1500 * time.Millisecond, ""}, {"20ms", 20 * time.Millisecond, ""},
		{"1h2m3.004s", time.Hour + 2*time.Minute + 3004*time.Millisecond, ""}, {"0.5ms", 500 * time.Microsecond, ""},
		{"", 0, "empty"}, {"5", 0, "want a unit"}, {"s", 0, "want a number"}, {"1s2m", 0, "largest first"},
		{"1m1m", 0, "largest first"}, {"1..2s", 0, "bad number"}, {"1.s", 0, "bad number"}, {".5s", 0, "bad number"},
		{"25h", 0, "over 24h"}, {"-1s", 0, "want a number"}, {"1d", 0, "want a unit"}, {strings.Repeat("1", 70) + "s", 0, "too long"},
	} {
		got, err := ParseReset(tc.s)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("ParseReset(%q) = %v, %v; want %v", tc.s, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseReset(%q) error %v; want one containing %q", tc.s, err, tc.err)
		}
	}
}

// FuzzReset: ParseReset never panics and reads back whatever FormatReset
// writes, as the rounded-up millisecond duration.
func FuzzReset(f *testing.F) {
	for _, s := range []string{"6m0s", "1.5s", "20ms", "1h2m3.004s", "0s", "1..s", "999999h"} {
		f.Add(s, int64(0))
	}
	f.Add("", int64(17500*time.Millisecond))
	f.Fuzz(func(t *testing.T, s string, n int64) {
		if d, err := ParseReset(s); err == nil && (d < 0 || d > maxReset) {
			t.Fatalf("ParseReset(%q) = %v, out of range", s, d)
		}
		d := time.Duration(n) % (maxReset + 1)
		out := FormatReset(d)
		back, err := ParseReset(out)
		if err != nil {
			t.Fatalf("ParseReset(FormatReset(%v) = %q): %v", d, out, err)
		}
		want := max(d, 0)
		want = (want + time.Millisecond - 1).Truncate(time.Millisecond)
		if back != want {
			t.Fatalf("FormatReset(%v) = %q reads back as %v, want %v", d, out, back, want)
		}
	})
}
