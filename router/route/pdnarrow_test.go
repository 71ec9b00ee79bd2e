package route

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestPDNarrowsLargeFleet: a disaggregated model of 300 replicas is
// decided over the narrowed list (the prompt's holders and a sample of
// 4), not every replica: a decode replica that caches the prompt's first
// block and, with a hundred prefill replicas, one that caches all of it.
// With a single prefill replica, which holds nothing, the narrowed list
// lacks it (unless sampled) and the decision widens to every replica, so
// the request is still prefilled remotely.
func TestPDNarrowsLargeFleet(t *testing.T) {
	const n = 300
	cases := []struct {
		name          string
		prefills      int
		prefillHolder string // the prefill replica that caches the whole prompt, if any
		want          string // the prefill replica chosen
		narrowed      bool   // always decided over the narrowed list
	}{
		{"a third prefill replicas", 100, "p-050", "p-050", true},
		{"one prefill replica, outside the narrowed list", 1, "", "p-000", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			models := index.NewModels(index.Options{})
			sink := ingest.New(models, ingest.Options{})
			tracker := load.NewTracker(load.WithPrefillRate(0))
			set := replicas.New(sink, tracker, replicas.Options{Holders: models, Sample: 4})
			list := make([]replicas.Replica, n)
			for i := range list {
				list[i] = replicas.Replica{ID: fmt.Sprintf("d-%03d", i), Model: "m", BlockSize: 16, Role: replicas.RoleDecode}
				if i < tc.prefills {
					list[i].ID, list[i].Role = fmt.Sprintf("p-%03d", i), replicas.RolePrefill
				}
			}
			set.Replace(list)
			keys := []uint64{11, 12, 13, 14}
			held := []kvwire.Replica{{ID: "d-150", BlockSize: 16, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: keys[:1]}}}}
			if tc.prefillHolder != "" {
				held = append(held, kvwire.Replica{ID: tc.prefillHolder, BlockSize: 16, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: keys}}})
			}
			sink.ApplyUpdate(&kvwire.Update{Version: kvwire.Version, Driver: "drv", Epoch: 1, Seq: 1, Snapshot: true, Replicas: held})
			reg := scheduler.NewRegistry()
			if err := scheduler.RegisterBuiltins(reg); err != nil {
				t.Fatal(err)
			}
			sched, err := reg.Build(scheduler.DefaultConfig(), scheduler.Deps{Index: models, Rand: rand.NewPCG(1, 2)})
			if err != nil {
				t.Fatal(err)
			}
			prompts, _ := prompt.New(map[string]prompt.Source{"m": {Encoder: simencoder.Encoder{}}})
			g, err := New(Deps{Replicas: set, Tracker: tracker, Prompts: prompts, Registry: prometheus.NewRegistry(), Scheduler: sched,
				Options: Options{Attempts: 3}})
			if err != nil {
				t.Fatal(err)
			}
			for range 20 {
				p := g.getPlan()
				p.sreq.Reset(scheduler.Request{Model: "m", Keys: keys, BlockTokens: 16, PromptTokens: 64, Fallbacks: 4})
				d, serving, err := g.scheduleRoles(context.Background(), "m", p)
				if err != nil || !p.pd.remote || p.pd.decision.Chosen.Candidate.ID != tc.want || set.RoleOf(d.Chosen.Candidate.ID) != replicas.RoleDecode {
					t.Fatalf("decided %s (%v), path %s, prefill on %s; want a decode replica after a remote prefill on %s",
						d.Chosen.Candidate.ID, err, p.pd.path, p.pd.decision.Chosen.Candidate.ID, tc.want)
				}
				if considered := len(serving) + len(p.pd.cands); tc.narrowed && considered > 2+4 {
					t.Fatalf("decided over %d of %d replicas; want the narrowed 2 holders and 4 sampled", considered, n)
				}
				g.Release(p)
			}
			if !tc.narrowed {
				return
			}
			// A continuation of a stream that failed on the holder d-150 is
			// narrowed too, without it, and still goes to a decode replica.
			sreq := &scheduler.Request{}
			sreq.Reset(scheduler.Request{Model: "m", Keys: keys, BlockTokens: 16, PromptTokens: 64, Fallbacks: 4})
			failed := []string{"d-150"}
			serving, prefill := g.continuationLists("m", sreq, failed, true)
			isFailed := func(c scheduler.Candidate) bool { return c.ID == "d-150" }
			if n := len(serving) + len(prefill); n > 2+4 || n == 0 || slices.ContainsFunc(serving, isFailed) {
				t.Errorf("continuation lists %d serving and %d prefill replicas (failed among them: %v); want at most the narrowed 2+4, less the failed one",
					len(serving), len(prefill), slices.ContainsFunc(serving, isFailed))
			}
			d, err := g.scheduleContinuation(context.Background(), "m", sreq, failed)
			if err != nil || d.Chosen.Candidate.ID == "d-150" || set.RoleOf(d.Chosen.Candidate.ID) != replicas.RoleDecode {
				t.Errorf("continuation goes to %s (%v); want a decode replica other than the failed d-150", d.Chosen.Candidate.ID, err)
			}
		})
	}
}
