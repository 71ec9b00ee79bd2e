package bench

import (
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/peerpolicy"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestPoliciesBuild: every policy's scheduler block is one the router's
// strict config loader accepts and its registry builds, so a comparison
// never dies on a typo after starting the fleet. The registry is
// llmgw-router's: the built-ins and the peers' policies, which it
// registers as plugins.
func TestPoliciesBuild(t *testing.T) {
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		t.Fatal(err)
	}
	if err := peerpolicy.Register(reg); err != nil {
		t.Fatal(err)
	}
	for _, p := range Policies() {
		t.Run(p.Name, func(t *testing.T) {
			c := config.Default()
			if p.Scheduler != "" {
				if err := c.ParseHCL([]byte("scheduler {\n"+p.Scheduler+"}\n"), p.Name+".hcl"); err != nil {
					t.Fatal(err)
				}
			}
			if p.Router() != "" {
				if err := c.ParseHCL([]byte(p.Router()+"\n"), p.Name+".hcl"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := reg.Build(c.Scheduler, scheduler.Deps{Index: index.NewModels(index.Options{})}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if _, err := SelectPolicies("round-robin,nope"); err == nil {
		t.Error("an unknown policy name was accepted")
	}
}

// The hit-rule policies and precise-prefix-no-spec are the router's default
// scheduler with only the prefix scorer's params changed (kv_groups_rule,
// speculative_ttl), so a comparison measures that and nothing else.
func TestRulePoliciesAreTheDefault(t *testing.T) {
	def := scheduler.DefaultConfig()
	for _, name := range []string{"precise-prefix-all-full", "precise-prefix-full-only", "precise-prefix-no-spec"} {
		ps, err := SelectPolicies(name)
		if err != nil {
			t.Fatal(err)
		}
		c := config.Default()
		if err := c.ParseHCL([]byte("scheduler {\n"+ps[0].Scheduler+"}\n"), name+".hcl"); err != nil {
			t.Fatal(err)
		}
		s := c.Scheduler
		if len(s.Scorers) != len(def.Scorers) || len(s.Filters) != len(def.Filters) || s.Picker.Type != def.Picker.Type {
			t.Fatalf("%s: %+v; want the default's plugins %+v", name, s, def)
		}
		for i, sc := range s.Scorers {
			if sc.Type != def.Scorers[i].Type || sc.Weight != def.Scorers[i].Weight {
				t.Errorf("%s: scorer %d %s weight %g; want %s weight %g", name, i, sc.Type, sc.Weight, def.Scorers[i].Type, def.Scorers[i].Weight)
			}
			if (sc.Type == "prefix") != (len(sc.Params) > 0) {
				t.Errorf("%s: scorer %s params %s", name, sc.Type, sc.Params)
			}
		}
	}
}

// precise-prefix-no-copies is the router's default scheduler less its
// replicator, and precise-prefix (the default config) has one.
func TestNoCopiesPolicyIsTheDefaultLessCopies(t *testing.T) {
	ps, err := SelectPolicies("precise-prefix-no-copies")
	if err != nil {
		t.Fatal(err)
	}
	c := config.Default()
	if err := c.ParseHCL([]byte("scheduler {\n"+ps[0].Scheduler+"}\n"), "no-copies.hcl"); err != nil {
		t.Fatal(err)
	}
	def := scheduler.DefaultConfig()
	if def.Replicator == nil {
		t.Fatal("the default config has no replicator: precise-prefix-no-copies compares nothing")
	}
	got := c.Scheduler
	if got.Replicator != nil {
		t.Errorf("precise-prefix-no-copies has replicator %+v; want none", got.Replicator)
	}
	got.Replicator = def.Replicator
	if !reflect.DeepEqual(got, def) {
		t.Errorf("precise-prefix-no-copies differs from the default in more than its replicator:\n%+v\n%+v", got, def)
	}
}

// precise-prefix-unpinned is the router's default in every respect but
// pin_data_parallel_rank, so a comparison with precise-prefix on
// data-parallel replicas measures rank pinning and nothing else.
func TestUnpinnedPolicyIsTheDefault(t *testing.T) {
	ps, err := SelectPolicies("precise-prefix,precise-prefix-unpinned")
	if err != nil {
		t.Fatal(err)
	}
	pinned, unpinned := config.Default(), config.Default()
	if err := unpinned.ParseHCL([]byte(ps[1].Router()+"\n"), "unpinned.hcl"); err != nil {
		t.Fatal(err)
	}
	if ps[0].Scheduler != "" || ps[0].Router() != "" || ps[1].Scheduler != "" {
		t.Errorf("policies %+v; want the default scheduler for both and router options only on the unpinned one", ps)
	}
	if !pinned.PinDataParallelRank || unpinned.PinDataParallelRank {
		t.Errorf("pin_data_parallel_rank: precise-prefix %t, precise-prefix-unpinned %t; want true, false",
			pinned.PinDataParallelRank, unpinned.PinDataParallelRank)
	}
	unpinned.PinDataParallelRank = true
	if !reflect.DeepEqual(pinned, unpinned) {
		t.Errorf("precise-prefix-unpinned changes more than pin_data_parallel_rank:\n%+v\n%+v", unpinned, pinned)
	}
}
