package peers

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/ratelimit"
	"github.com/llmgw/llmgw/router/tenant"
)

// TestTenantsReachThePeersLimiter: router a's admissions, published over
// real HTTP, drain router b's bucket for the same tenant; a's requests in
// flight count against b's concurrency limit until they end.
func TestTenantsReachThePeersLimiter(t *testing.T) {
	t.Parallel()
	// A minute's budget refills at 1000 tokens a second; one request at
	// a time, fleet-wide.
	ten := &tenant.Tenant{Name: "team", Limits: tenant.Limits{TokensPerMinute: 60000, MaxConcurrent: 1}}
	la, lb := ratelimit.New(), ratelimit.New()
	tab, err := NewTable("b", "secret", load.NewTracker(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tab.SetTenantSink(lb)
	srv := httptest.NewServer(tab)
	defer srv.Close()
	p, err := StartPublisher(context.Background(), PublisherOptions{
		Self: "a", Token: "secret", Interval: 5 * time.Millisecond, KeepAlive: time.Hour,
		Own: load.NewTracker().Own, Tenants: la.Own,
		Targets: func() []Target { return []Target{{ID: "b", URL: srv.URL}} },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	// b meets the tenant (its bucket is full) before a admits.
	first, s := lb.Admit(ten, 0, false)
	if !s.Allowed {
		t.Fatal(s)
	}
	first.Finish(-1)
	poll.Until(t, "b to hear from a", func() bool { return tab.Peers() == 1 })
	refused := func(limit ratelimit.Limit, tokens int64) func() bool {
		return func() bool {
			g, s := lb.Admit(ten, tokens, false)
			g.Finish(0) // an admitted probe gives its tokens back
			return !s.Allowed && s.Limit == limit
		}
	}
	// a's request in flight counts at b at once, in the tenant's first
	// report (which only sets where a's totals start).
	g, s := la.Admit(ten, 0, false)
	if !s.Allowed {
		t.Fatal(s)
	}
	poll.Until(t, "b to count a's request in flight", refused(ratelimit.LimitConcurrent, 0))
	g.Finish(-1)
	poll.Until(t, "b to see it end", func() bool { return !refused(ratelimit.LimitConcurrent, 0)() })
	// a's next request spends the minute's tokens; b, refilling 1000 a
	// second, refuses half a minute's worth.
	if g, s = la.Admit(ten, 60000, false); !s.Allowed {
		t.Fatal(s)
	}
	g.Finish(-1)
	poll.Until(t, "b to charge a's tokens", refused(ratelimit.LimitTokens, 30000))
}
