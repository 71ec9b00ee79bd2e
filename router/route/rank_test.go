package route

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// newRankPlanner is a planner with the default scheduler over replicas of
// model "m" (vllm-sim's tokenizer) declaring the data-parallel sizes dp
// (0: undeclared), each in exact mode with nothing of the test's prompts
// cached.
func newRankPlanner(t *testing.T, dp ...int) *Planner {
	t.Helper()
	models := index.NewModels(index.Options{})
	tracker := load.NewTracker(load.WithPrefillRate(0))
	sink := ingest.New(models, ingest.Options{})
	set := replicas.New(sink, tracker, replicas.Options{Holders: models})
	list := make([]replicas.Replica, len(dp))
	snap := &kvwire.Update{Version: kvwire.Version, Driver: "node", Epoch: 1, Snapshot: true}
	for i := range list {
		list[i] = replicas.Replica{ID: fmt.Sprintf("r%d", i), Model: "m", Address: fmt.Sprintf("127.0.0.1:%d", 1+i), BlockSize: 16, DataParallelSize: dp[i]}
		snap.Replicas = append(snap.Replicas, kvwire.Replica{ID: list[i].ID, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: []uint64{uint64(1 + i)}}}})
	}
	set.Replace(list)
	sink.ApplyUpdate(snap)
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
		Options: Options{Attempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// sendPlan plans a completion of text on pl, tells the planner it was
// sent to its first attempt, and returns that attempt.
func sendPlan(t *testing.T, pl *Planner, text string) Attempt {
	t.Helper()
	body := fmt.Sprintf(`{"model":"m","prompt":%q}`, text)
	p, e := pl.Plan(context.Background(), Input{Kind: openai.Completion, Body: []byte(body)})
	if e != nil {
		t.Fatal(e)
	}
	defer pl.Release(p)
	if len(p.Attempts) == 0 {
		t.Fatal("no attempts")
	}
	a := p.Attempts[0]
	if a.Mode != ModeExact {
		t.Fatalf("%s routed in %s mode; want exact", a.Replica, a.Mode)
	}
	p.Sent(a)
	return a
}

// TestColdPromptRank: on a replica declaring four data-parallel ranks, a
// prompt no rank holds is pinned to a rank the planner chooses, and a
// sibling sharing its prefix, sent before any KV event arrives (credited
// speculatively), is pinned to the same rank; distinct cold prompts go to
// the ranks in turn. A replica of undeclared size is never pinned for a
// cold prompt.
func TestColdPromptRank(t *testing.T) {
	prefix := func(i int) string { return strings.Repeat(fmt.Sprintf("group %d shares this system prompt. ", i), 12) }
	pl := newRankPlanner(t, 4)
	seen := map[int]bool{}
	for i := range 4 {
		first := sendPlan(t, pl, prefix(i)+"question one")
		if !first.Pinned || first.PinRank < 0 || first.PinRank >= 4 {
			t.Fatalf("group %d: cold prompt pinned %t to rank %d; want a rank in [0, 4)", i, first.Pinned, first.PinRank)
		}
		if first.Rank.Blocks != 0 {
			t.Errorf("group %d: cold prompt predicted on %+v; want no rank holding any", i, first.Rank)
		}
		seen[first.PinRank] = true
		sibling := sendPlan(t, pl, prefix(i)+"question two")
		if !sibling.Pinned || sibling.PinRank != first.PinRank {
			t.Errorf("group %d: sibling pinned %t to rank %d; want rank %d, the first prompt's", i, sibling.Pinned, sibling.PinRank, first.PinRank)
		}
		if sibling.Rank.Rank != first.PinRank || sibling.Rank.Blocks == 0 {
			t.Errorf("group %d: sibling predicted on %+v; want rank %d holding the shared prefix", i, sibling.Rank, first.PinRank)
		}
	}
	if len(seen) != 4 {
		t.Errorf("four cold prompts went to ranks %v; want all four ranks", seen)
	}

	undeclared := newRankPlanner(t, 0)
	for i := range 2 {
		if a := sendPlan(t, undeclared, prefix(i)+"question"); a.Pinned {
			t.Errorf("replica of unknown data-parallel size: cold prompt pinned to rank %d; want none", a.PinRank)
		}
	}
}
