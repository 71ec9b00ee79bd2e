package route

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
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
// sent to its first attempt, and returns that attempt; the request ends
// (the plan is released) as sendPlan returns.
func sendPlan(t *testing.T, pl *Planner, text string) Attempt {
	t.Helper()
	p, a := sendHeld(t, pl, text)
	pl.Release(p)
	return a
}

// sendHeld is sendPlan leaving the request in flight until the caller
// releases the plan.
func sendHeld(t *testing.T, pl *Planner, text string) (*Plan, Attempt) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"m","prompt":%q}`, text)
	p, e := pl.Plan(context.Background(), Input{Kind: openai.Completion, Body: []byte(body)})
	if e != nil {
		t.Fatal(e)
	}
	if len(p.Attempts) == 0 {
		t.Fatal("no attempts")
	}
	a := p.Attempts[0]
	if a.Mode != ModeExact {
		t.Fatalf("%s routed in %s mode; want exact", a.Replica, a.Mode)
	}
	p.Sent(a)
	return p, a
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

// TestColdPromptRankFollowsInFlight: the planner sends a cold prompt to
// the rank with the fewest of its requests in flight, scanning from a
// start that moves on by one per choice, as vLLM's DP balancer scores
// ranks; a request counts on its rank until its plan is released.
func TestColdPromptRankFollowsInFlight(t *testing.T) {
	pl := newRankPlanner(t, 4)
	cold := func(i int) string { return strings.Repeat(fmt.Sprintf("cold prompt %d. ", i), 30) }
	held := map[int]*Plan{}
	for i := range 4 {
		p, a := sendHeld(t, pl, cold(i))
		if held[a.PinRank] != nil {
			t.Fatalf("cold prompt %d went to rank %d, which has one in flight while another rank has none", i, a.PinRank)
		}
		held[a.PinRank] = p
	}
	// Every rank has one in flight; the scan starts at rank 0 again.
	// Ending rank 2's request leaves it the only rank with none.
	pl.Release(held[2])
	delete(held, 2)
	p, a := sendHeld(t, pl, cold(4))
	if a.PinRank != 2 {
		t.Errorf("cold prompt went to rank %d; want 2, the only rank with nothing in flight", a.PinRank)
	}
	held[2] = p
	for _, p := range held {
		pl.Release(p)
	}
	// All ended: equals take turns from where the scan stopped.
	var got []int
	for i := range 4 {
		got = append(got, sendPlan(t, pl, cold(10+i)).PinRank)
	}
	if want := []int{1, 2, 3, 0}; !slices.Equal(got, want) {
		t.Errorf("idle ranks chosen in the order %v; want %v", got, want)
	}
}

// TestRankLoadChoose: the choice is the strictly fewest in flight, the
// first such from the start.
func TestRankLoadChoose(t *testing.T) {
	tests := []struct {
		inflight []int64
		start    uint64
		want     int
	}{
		{[]int64{0, 0, 0, 0}, 0, 0},
		{[]int64{0, 0, 0, 0}, 6, 2},
		{[]int64{1, 0, 1, 0}, 0, 1},
		{[]int64{1, 0, 1, 0}, 2, 3},
		{[]int64{2, 3, 1, 1}, 1, 2},
		{[]int64{0, 5}, 1, 0},
	}
	for _, tt := range tests {
		l := &rankLoad{inflight: make([]atomic.Int64, len(tt.inflight))}
		for r, n := range tt.inflight {
			l.inflight[r].Store(n)
		}
		l.next.Store(tt.start)
		if got := l.choose(); got != tt.want {
			t.Errorf("in flight %v, start %d: rank %d; want %d", tt.inflight, tt.start, got, tt.want)
		}
	}
}
