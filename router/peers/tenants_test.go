package peers

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/poll"
	"github.com/llmgw/llmgw/router/ratelimit"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/tenant"
)

// TestTenantsReachThePeersLimiter: router a's admissions, published over
// real HTTP, drain router b's bucket for the same tenant; a's requests in
// flight count against b's concurrency limit until they end, and until a
// expires.
func TestTenantsReachThePeersLimiter(t *testing.T) {
	// A minute's budget refills at 1000 tokens a second.
	ten := &tenant.Tenant{Name: "team", Limits: tenant.Limits{TokensPerMinute: 60000, MaxConcurrent: 100}}
	la, lb := ratelimit.New(), ratelimit.New()
	tab, err := NewTable("b", "secret", scheduler.NewTracker(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tab.SetTenantSink(lb)
	srv := httptest.NewServer(tab)
	defer srv.Close()
	p, err := StartPublisher(context.Background(), PublisherOptions{
		Self: "a", Token: "secret", Interval: 5 * time.Millisecond, KeepAlive: time.Hour,
		Own: scheduler.NewTracker().Own, Tenants: la.Own,
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
	g, s := la.Admit(ten, 60000, false)
	if !s.Allowed {
		t.Fatal(s)
	}
	// b now refuses half a minute's tokens: a's request used the budget,
	// and b refills no more than 1000 a second.
	poll.Until(t, "b to charge a's request", func() bool {
		g, s := lb.Admit(ten, 30000, false)
		g.Finish(-1)
		return !s.Allowed && s.Limit == ratelimit.LimitTokens
	})
	one := &tenant.Tenant{Name: "team", Limits: tenant.Limits{MaxConcurrent: 1}}
	if _, s := lb.Admit(one, 0, false); s.Allowed {
		t.Error("b admitted beyond a concurrency of 1 with a's request in flight")
	}
	g.Finish(-1)
	poll.Until(t, "b to see a's request end", func() bool {
		g, s := lb.Admit(one, 0, false)
		g.Finish(-1)
		return s.Allowed
	})
}
