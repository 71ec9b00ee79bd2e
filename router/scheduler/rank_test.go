package scheduler

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/llmgw/llmgw/router/index"
)

// TestDecisionCarriesDataParallelRank: a decision names, for each
// candidate, the data-parallel rank whose KV events hold the most of the
// prompt and how many blocks that is; a candidate no rank of which holds
// any names none (Blocks 0), so the engine balances it.
func TestDecisionCarriesDataParallelRank(t *testing.T) {
	prompt := keys(1, 8)
	idx := index.NewModels(index.Options{})
	// Replica a: rank 1 holds 3 blocks, rank 3 holds 6. Replica b: rank 2
	// holds 2. Replica c: nothing.
	for _, u := range []struct {
		replica string
		rank, n int
	}{{"a", 1, 3}, {"a", 3, 6}, {"b", 2, 2}} {
		if err := idx.For("m").Update(u.replica, []index.Change{{Rank: u.rank, Tier: index.GPU, Add: prompt[:u.n]}}); err != nil {
			t.Fatal(err)
		}
	}
	r := NewRegistry()
	if err := RegisterBuiltins(r); err != nil {
		t.Fatal(err)
	}
	s, err := r.Build(Config{
		Filters: []Spec{{Type: "model"}},
		Scorers: []Spec{{Type: "prefix", Weight: 1, Params: json.RawMessage(`{"speculative_ttl":"0s"}`)}},
		Picker:  Spec{Type: "max-score"},
	}, Deps{Index: idx, Now: newClock().now, Rand: rand.NewPCG(1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{Model: "m", Keys: prompt, BlockTokens: 16, PromptTokens: 8 * 16}
	d, err := s.Schedule(context.Background(), req, []Candidate{cand("a", ModeExact), cand("b", ModeExact), cand("c", ModeExact)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]RankHit{"a": {Rank: 3, Blocks: 6}, "b": {Rank: 2, Blocks: 2}, "c": {}}
	if d.Chosen.Candidate.ID != "a" {
		t.Errorf("chose %s; want a, which caches the most", d.Chosen.Candidate.ID)
	}
	for _, rk := range append([]Ranked{d.Chosen}, d.Fallbacks...) {
		if got := rk.Rank; got != want[rk.Candidate.ID] {
			t.Errorf("%s: rank %+v; want %+v", rk.Candidate.ID, got, want[rk.Candidate.ID])
		}
	}
}
