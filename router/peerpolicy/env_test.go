package peerpolicy_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/peerpolicy"
	"github.com/llmgw/llmgw/router/scheduler"
)

// registry is what cmd/llmgw-router builds: the scheduler's built-ins,
// then the peers' policies through the plugin seam.
func registry(t *testing.T) *scheduler.Registry {
	t.Helper()
	r := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(r); err != nil {
		t.Fatal(err)
	}
	if err := peerpolicy.Register(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func keys(from, to uint64) []uint64 {
	var ks []uint64
	for k := from; k <= to; k++ {
		ks = append(ks, k*0x9E3779B97F4A7C15)
	}
	return ks
}

func cand(id string, mode scheduler.Mode) scheduler.Candidate {
	return scheduler.Candidate{ID: id, Model: "m", Mode: mode, Healthy: true}
}

// env is a scheduler built from a config over a precise index, on a
// fixed clock and a seeded picker, so every decision is reproducible.
type env struct {
	idx *index.Models
	s   *scheduler.Scheduler
}

func newEnv(t *testing.T, cfg scheduler.Config) *env {
	t.Helper()
	e := &env{idx: index.NewModels(index.Options{})}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := registry(t).Build(cfg, scheduler.Deps{Index: e.idx, Now: func() time.Time { return at }, Rand: rand.NewPCG(1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	e.s = s
	return e
}

func (e *env) store(t *testing.T, replica string, tier index.Tier, ks []uint64) {
	t.Helper()
	if err := e.idx.For("m").Update(replica, []index.Change{{Tier: tier, Add: ks}}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) route(t *testing.T, req *scheduler.Request, cands []scheduler.Candidate) scheduler.Decision {
	t.Helper()
	d, err := e.s.Schedule(context.Background(), req, cands)
	if err != nil {
		t.Fatal(err)
	}
	e.s.Routed(req, &d.Chosen.Candidate)
	return d
}

// TestRegister: Register adds exactly the peers' eight types beside the
// built-ins, and a second Register into the same registry fails naming
// the type already there.
func TestRegister(t *testing.T) {
	builtins := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(builtins); err != nil {
		t.Fatal(err)
	}
	r := registry(t)
	var added []string
	for _, typ := range r.Types() {
		if !slices.Contains(builtins.Types(), typ) {
			added = append(added, typ)
		}
	}
	want := []string{"aibrix-prefix-cache", "dynamo-cost", "llmd-kv-utilization", "llmd-precise-prefix", "llmd-queue", "llmd-sticky",
		"sglang-cache-aware", "smg-cache-aware"}
	if !slices.Equal(added, want) {
		t.Errorf("Register added %v; want %v", added, want)
	}
	if len(r.Types()) != len(builtins.Types())+len(want) {
		t.Errorf("registry holds %d types; want the %d built-ins and %d peers", len(r.Types()), len(builtins.Types()), len(want))
	}
	err := peerpolicy.Register(r)
	if err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("second Register: %v; want an already-registered error", err)
	}
}
