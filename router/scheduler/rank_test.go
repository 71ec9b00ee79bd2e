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

// TestSpeculativeCreditNamesRank: a prompt sent pinned to a rank
// (RoutedRank) credits that rank, so a sibling sharing its prefix, decided
// before any KV event arrives, is predicted on the rank with the shared
// blocks; the latest prompt through a prefix names its rank; one sent
// unpinned credits the replica only, and the prediction falls back to what
// the events show.
func TestSpeculativeCreditNamesRank(t *testing.T) {
	shared := keys(1, 6)
	prompt := func(tail uint64) []uint64 {
		return append(append([]uint64(nil), shared...), keys(100*tail, 100*tail+1)...)
	}
	tests := []struct {
		name  string
		sent  []int // ranks the earlier prompts were pinned to, in order (-1: unpinned)
		event int   // blocks of the shared prefix rank 3's events show (0: none)
		want  RankHit
	}{
		{"pinned", []int{2}, 0, RankHit{Rank: 2, Blocks: 6}},
		{"latest wins", []int{2, 1}, 0, RankHit{Rank: 1, Blocks: 6}},
		{"unpinned", []int{-1}, 0, RankHit{}},
		{"unpinned after pinned", []int{2, -1}, 0, RankHit{}},
		{"events shallower", []int{2}, 4, RankHit{Rank: 2, Blocks: 6}},
		{"unpinned falls back to events", []int{-1}, 4, RankHit{Rank: 3, Blocks: 4}},
	}
	for _, tt := range tests {
		e := newEnv(t, Config{
			Filters: []Spec{{Type: "model"}},
			Scorers: []Spec{{Type: "prefix", Weight: 1}},
			Picker:  Spec{Type: "max-score"},
		})
		if tt.event > 0 {
			if err := e.idx.For("m").Update("a", []index.Change{{Rank: 3, Tier: index.GPU, Add: shared[:tt.event]}}); err != nil {
				t.Fatal(err)
			}
		}
		c := cand("a", ModeExact)
		for i, rank := range tt.sent {
			// Each earlier prompt shares the whole prefix, no more.
			e.s.RoutedRank(&Request{Model: "m", Keys: prompt(uint64(i + 1)), BlockTokens: 16}, &c, rank)
		}
		req := &Request{Model: "m", Keys: prompt(7), BlockTokens: 16, PromptTokens: 8 * 16}
		d, err := e.s.Schedule(context.Background(), req, []Candidate{c})
		if err != nil {
			t.Fatal(err)
		}
		if d.Chosen.Rank != tt.want {
			t.Errorf("%s: sibling predicted on %+v; want %+v", tt.name, d.Chosen.Rank, tt.want)
		}
	}
}

// TestHistoryRankBits: a pair keeps a rank in [0, maxRank] beside its
// replica and time, and records none for a rank outside it.
func TestHistoryRankBits(t *testing.T) {
	for _, rank := range []int{-1, 0, 1, 7, maxRank, maxRank + 1, 1 << 20} {
		p := packRank(pack(maxNames-1, timeMask), rank)
		want := rank
		if rank < 0 || rank > maxRank {
			want = -1
		}
		if got := unpackRank(p); got != want {
			t.Errorf("rank %d: unpacked %d; want %d", rank, got, want)
		}
		if unpackID(p) != maxNames-1 || unpackTime(p) != timeMask {
			t.Errorf("rank %d: id %d, time %d; want %d, %d", rank, unpackID(p), unpackTime(p), maxNames-1, uint64(timeMask))
		}
	}
}
