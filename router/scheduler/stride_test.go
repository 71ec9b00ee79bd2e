package scheduler

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/router/index"
)

func TestStrideFor(t *testing.T) {
	def := defaultPrefixParams()
	tests := []struct {
		name string
		p    PrefixParams
		req  Request
		want int
	}{
		{"short prompt", def, Request{PromptTokens: 8000, Keys: make([]uint64, 500), BlockTokens: 16}, 1},
		{"just below the threshold", def, Request{PromptTokens: DefaultLongPromptTokens - 1}, 1},
		{"at the threshold", def, Request{PromptTokens: DefaultLongPromptTokens}, DefaultLongStride},
		{"tokens from keys", def, Request{Keys: make([]uint64, 2048), BlockTokens: 16}, DefaultLongStride},
		{"threshold off", PrefixParams{Stride: 1, LongStride: 32}, Request{PromptTokens: 1 << 20}, 1},
		{"configured stride wins when larger", PrefixParams{Stride: 64, LongStride: 32, LongPromptTokens: 100}, Request{PromptTokens: 200}, 64},
		{"configured stride for short prompts", PrefixParams{Stride: 4, LongStride: 32, LongPromptTokens: 100}, Request{PromptTokens: 50}, 4},
	}
	for _, tc := range tests {
		if got := tc.p.strideFor(&tc.req); got != tc.want {
			t.Errorf("%s: strideFor = %d; want %d", tc.name, got, tc.want)
		}
	}
}

func TestStrideParamsValidate(t *testing.T) {
	for _, tc := range []struct{ params, want string }{
		{`{"long_stride":0}`, "long_stride 0"},
		{`{"long_stride":5000}`, "long_stride 5000"},
		{`{"long_prompt_tokens":-1}`, "long_prompt_tokens -1"},
	} {
		p := defaultPrefixParams()
		err := decodeValid(json.RawMessage(tc.params), &p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v; want an error containing %q", tc.params, err, tc.want)
		}
	}
}

// strideSpy records the stride of each lookup it passes on.
type strideSpy struct {
	PrefixIndex
	strides []int
}

func (s *strideSpy) LookupReplicas(model string, keys []uint64, stride int, replicas []string, out []index.Match) []index.Match {
	s.strides = append(s.strides, stride)
	return s.PrefixIndex.LookupReplicas(model, keys, stride, replicas, out)
}

// TestLongPromptStrideSameDecision: on indexes where every replica's cached
// blocks are a prefix of the prompt's chain, GPU blocks first (what vLLM's
// tail-first eviction and offloading leave), the automatic stride for long
// prompts decides exactly as reading every block does: same choice, same
// scores, same predicted cached blocks for every candidate.
func TestLongPromptStrideSameDecision(t *testing.T) {
	const blocks = 3000 // 48,000 tokens of 16
	prompt := keys(1, blocks)
	build := func(ix PrefixIndex, params string) *Scheduler {
		t.Helper()
		r := NewRegistry()
		if err := RegisterBuiltins(r); err != nil {
			t.Fatal(err)
		}
		cfg := Config{
			Filters: []Spec{{Type: "model"}},
			Scorers: []Spec{{Type: "prefix", Weight: 1, Params: json.RawMessage(params)}},
			Picker:  Spec{Type: "max-score"},
		}
		s, err := r.Build(cfg, Deps{Index: ix, Now: newClock().now, Rand: rand.NewPCG(1, 2)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := range 40 {
		idx := index.NewModels(index.Options{})
		spy := &strideSpy{PrefixIndex: idx}
		exact := build(idx, `{"speculative_ttl":"0s","long_prompt_tokens":0}`)
		auto := build(spy, `{"speculative_ttl":"0s"}`)
		var cands []Candidate
		for r := range 2 + rng.IntN(7) {
			id := string(rune('a' + r))
			gpu := rng.IntN(blocks + 1)
			if rng.IntN(4) == 0 {
				gpu = blocks // someone holds the whole prompt
			}
			cpu := rng.IntN(blocks - gpu + 1)
			ch := []index.Change{{Tier: index.GPU, Add: prompt[:gpu]}, {Tier: index.CPU, Add: prompt[gpu : gpu+cpu]}}
			if err := idx.For("m").Update(id, ch); err != nil {
				t.Fatal(err)
			}
			cands = append(cands, cand(id, ModeExact))
		}
		decide := func(s *Scheduler) Decision {
			req := &Request{Model: "m", Keys: prompt, BlockTokens: 16, PromptTokens: blocks * 16}
			d, err := s.Schedule(context.Background(), req, cands)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		want, got := decide(exact), decide(auto)
		// Ties are broken at random; compare the sets of scores per replica.
		if d := cmp.Diff(byReplica(want), byReplica(got)); d != "" {
			t.Fatalf("trial %d (-stride 1 +auto stride):\n%s", trial, d)
		}
		if want.Chosen.Total != got.Chosen.Total {
			t.Fatalf("trial %d: chosen total %v with stride 1, %v with auto stride", trial, want.Chosen.Total, got.Chosen.Total)
		}
		if len(spy.strides) != 1 || spy.strides[0] != DefaultLongStride {
			t.Fatalf("trial %d: lookups used strides %v; want [%d]", trial, spy.strides, DefaultLongStride)
		}
	}
}

type ranking struct {
	Total  float64
	Scores []float64
	Cached int
}

func byReplica(d Decision) map[string]ranking {
	out := map[string]ranking{}
	for _, r := range append([]Ranked{d.Chosen}, d.Fallbacks...) {
		out[r.Candidate.ID] = ranking{r.Total, r.Scores, r.CachedBlocks}
	}
	return out
}
