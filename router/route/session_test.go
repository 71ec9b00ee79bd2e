package route

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/tenant"
)

// newTestPlanner is a planner with the default scheduler over n replicas
// r0, r1, ... of model "m" (vllm-sim's tokenizer), nothing cached.
func newTestPlanner(t *testing.T, n int) *Planner {
	t.Helper()
	models := make([]string, n)
	for i := range models {
		models[i] = "m"
	}
	return newTestPlannerOf(t, models...)
}

// newTestPlannerOf is newTestPlanner with replica ri serving models[i].
func newTestPlannerOf(t *testing.T, served ...string) *Planner {
	t.Helper()
	n := len(served)
	models := index.NewModels(index.Options{})
	tracker := load.NewTracker(load.WithPrefillRate(0))
	set := replicas.New(ingest.New(models, ingest.Options{}), tracker, replicas.Options{Holders: models})
	list := make([]replicas.Replica, n)
	for i := range list {
		list[i] = replicas.Replica{ID: fmt.Sprintf("r%d", i), Model: served[i], Address: fmt.Sprintf("127.0.0.1:%d", 1+i), BlockSize: 16}
	}
	set.Replace(list)
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		t.Fatal(err)
	}
	sched, err := reg.Build(scheduler.DefaultConfig(), scheduler.Deps{Index: models, Rand: rand.NewPCG(1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	prompts, _ := prompt.New(map[string]prompt.Source{"m": {Encoder: simencoder.Encoder{}}})
	pl, err := New(Deps{Replicas: set, Tracker: tracker, Prompts: prompts, Registry: prometheus.NewRegistry(), Scheduler: sched,
		Options: Options{Attempts: 2}})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// TestSessionsAreTenantScoped: a session id pins one tenant's session to
// the replica that served it, and the same id sent by another tenant (or
// without a key) is a session of its own: it neither follows the first
// tenant's replica nor re-pins it.
func TestSessionsAreTenantScoped(t *testing.T) {
	pl := newTestPlanner(t, 2)
	a, b := &tenant.Tenant{Name: "a"}, &tenant.Tenant{Name: "b"}
	in := Input{Kind: openai.Chat, Body: []byte(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`), Session: "s1"}
	as := tenant.NewContext(context.Background(), a)
	p, e := pl.Plan(as, in)
	if e != nil {
		t.Fatal(e)
	}
	pinned := p.Attempts[0].Replica
	p.Sent(p.Attempts[0])
	pl.Release(p)

	sessionScore := func(ctx context.Context, replica string) float64 {
		t.Helper()
		ex, e := pl.Explain(ctx, in)
		if e != nil {
			t.Fatal(e)
		}
		for _, r := range ex.Ranked {
			if r.Replica == replica {
				return r.Scores["session"]
			}
		}
		t.Fatalf("%s is not among the candidates %+v", replica, ex.Ranked)
		return 0
	}
	if got := sessionScore(as, pinned); got != 1 {
		t.Errorf("tenant a's session s1 on %s scores %g; want 1 (pinned there)", pinned, got)
	}
	for name, ctx := range map[string]context.Context{
		"tenant b":  tenant.NewContext(context.Background(), b),
		"no key":    context.Background(),
		"a's twin?": tenant.NewContext(context.Background(), &tenant.Tenant{Name: "a2"}),
	} {
		if got := sessionScore(ctx, pinned); got != 0 {
			t.Errorf("%s sending session s1 scores %g on %s; want 0 (another namespace)", name, got, pinned)
		}
	}
}

func TestSessionKey(t *testing.T) {
	for _, tc := range []struct {
		t    *tenant.Tenant
		id   string
		want string
	}{
		{tenant.Anonymous, "s", "s"},
		{nil, "s", "s"},
		{&tenant.Tenant{Name: "a"}, "", ""},
		{&tenant.Tenant{Name: "a"}, "s", "a\x00s"},
		{&tenant.Tenant{Name: "a\x00b"}, "s", "a\x00b\x00s"},
	} {
		if got := sessionKey(tc.t, tc.id); got != tc.want {
			t.Errorf("sessionKey(%v, %q) = %q; want %q", tc.t, tc.id, got, tc.want)
		}
	}
}
