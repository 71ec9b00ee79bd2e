package peerpolicy_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/peerpolicy"
	"github.com/llmgw/llmgw/router/scheduler"
)

// The peers' policies, configured as cmd/llmgw/internal/bench/peers.go
// runs them; each test pins a decision the peer's own rule makes on a
// case small enough to compute by hand (the arithmetic is in the comments).

func peerConfig(scorers ...scheduler.Spec) scheduler.Config {
	return scheduler.Config{Filters: []scheduler.Spec{{Type: "model"}, {Type: "healthy"}}, Scorers: scorers, Picker: scheduler.Spec{Type: "max-score"}}
}

// feedSpec is the prefix scorer as a source of predictions only.
var feedSpec = scheduler.Spec{Type: "prefix", Weight: 0.001, Params: json.RawMessage(`{"speculative_ttl": "0s"}`)}

func loaded(id string, l load.Load) scheduler.Candidate {
	c := cand(id, scheduler.ModeExact)
	c.Load = l
	return c
}

func scoresOf(d scheduler.Decision, scorer string) map[string]float64 {
	got := map[string]float64{}
	for _, r := range append([]scheduler.Ranked{d.Chosen}, d.Fallbacks...) {
		got[r.Candidate.ID] = d.Score(r, scorer)
	}
	return got
}

// TestDynamoCost: Dynamo's logit w x prefill blocks + decode blocks, the
// lowest wins. The prompt is 64 blocks of 16 tokens (1,024 tokens); a
// caches 48 blocks and has 2,048 tokens of prefill queued and 4,096 tokens
// of sequences active; b is idle and caches nothing; c caches all 64 and
// has 512 tokens queued, 1,024 active.
//
//	w = 1: a = (2048 + 1024 - 768)/16 + (4096 + 1024)/16 = 144 + 320 = 464
//	       b = 1024/16 + 1024/16                           =  64 +  64 = 128
//	       c = 512/16 + (1024 + 1024)/16                   =  32 + 128 = 160  -> b
//	w = 4: a = 576 + 320 = 896, b = 256 + 64 = 320, c = 128 + 128 = 256     -> c
//
// Scores are (max - logit)/(max - min): for w = 1, b 1, c 304/336, a 0.
func TestDynamoCost(t *testing.T) {
	tests := []struct {
		weight float64
		want   string
		scores map[string]float64
	}{
		{1, "b", map[string]float64{"a": 0, "b": 1, "c": 304.0 / 336}},
		{4, "c", map[string]float64{"a": 0, "b": 576.0 / 640, "c": 1}},
	}
	for _, tc := range tests {
		params, _ := json.Marshal(map[string]float64{"overlap_score_weight": tc.weight})
		e := newEnv(t, peerConfig(feedSpec, scheduler.Spec{Type: "dynamo-cost", Weight: 1, Params: params}))
		prompt := keys(1, 64)
		e.store(t, "a", index.GPU, prompt[:48])
		e.store(t, "c", index.GPU, prompt)
		cands := []scheduler.Candidate{
			loaded("a", load.Load{PrefillTokens: 2048, InFlightTokens: 4096}),
			loaded("b", load.Load{}),
			loaded("c", load.Load{PrefillTokens: 512, InFlightTokens: 1024}),
		}
		d := e.route(t, &scheduler.Request{Model: "m", Keys: prompt, BlockTokens: 16, PromptTokens: 1024}, cands)
		if d.Chosen.Candidate.ID != tc.want {
			t.Errorf("w=%g: chose %s; want %s", tc.weight, d.Chosen.Candidate.ID, tc.want)
		}
		for id, want := range tc.scores {
			if got := scoresOf(d, "dynamo-cost")[id]; math.Abs(got-want) > 1e-9 {
				t.Errorf("w=%g: %s scores %g; want %g", tc.weight, id, got, want)
			}
		}
	}
}

// TestSGLangCacheAware: the gateway's switch between the tree and the
// shortest queue, with its defaults (cache_threshold 0.3,
// balance_abs_threshold 64, balance_rel_threshold 1.5). Before each case
// a was sent blocks 1-10 and b blocks 1-2 then 100-107, so a's tree holds
// 10 blocks, b's 10 and c's none.
func TestSGLangCacheAware(t *testing.T) {
	prompt4 := append(keys(1, 4), keys(200, 205)...) // a matches 4 of 10, b 2
	prompt2 := append(keys(1, 2), keys(300, 307)...) // a and b match 2 of 10
	tests := []struct {
		name    string
		prompt  []uint64
		a, b, c int // requests in flight
		want    string
	}{
		// balanced; best match 4/10 = 0.4 > 0.3: the tree's choice
		{"match over threshold", prompt4, 0, 0, 0, "a"},
		// best match 2/10 = 0.2 <= 0.3: the smallest tree (a 10, b 10, c 0)
		{"match under threshold", prompt2, 0, 0, 0, "c"},
		// 100 - 30 = 70 > 64 and 100 > 1.5 x 30 = 45: imbalanced, shortest queue
		{"imbalanced", prompt4, 100, 30, 40, "b"},
		// 200 - 140 = 60 <= 64: balanced, the tree's choice despite the load
		{"under the absolute threshold", prompt4, 200, 140, 150, "a"},
		// 300 - 210 = 90 > 64 but 300 <= 1.5 x 210 = 315: balanced
		{"under the relative threshold", prompt4, 300, 210, 250, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, peerConfig(scheduler.Spec{Type: "sglang-cache-aware", Weight: 1}))
			e.route(t, &scheduler.Request{Model: "m", Keys: keys(1, 10), BlockTokens: 16}, []scheduler.Candidate{cand("a", scheduler.ModeExact)})
			e.route(t, &scheduler.Request{Model: "m", Keys: append(keys(1, 2), keys(100, 107)...), BlockTokens: 16}, []scheduler.Candidate{cand("b", scheduler.ModeExact)})
			cands := []scheduler.Candidate{loaded("a", load.Load{InFlight: tc.a}), loaded("b", load.Load{InFlight: tc.b}), loaded("c", load.Load{InFlight: tc.c})}
			d := e.route(t, &scheduler.Request{Model: "m", Keys: tc.prompt, BlockTokens: 16}, cands)
			if d.Chosen.Candidate.ID != tc.want {
				t.Errorf("chose %s; want %s (scores %v)", d.Chosen.Candidate.ID, tc.want, scoresOf(d, "sglang-cache-aware"))
			}
		})
	}
}

// TestSGLangTreeGrowsWithRouting: after c takes a cold prompt its tree is
// no longer the smallest, so the next cold prompt goes elsewhere.
func TestSGLangTreeGrowsWithRouting(t *testing.T) {
	e := newEnv(t, peerConfig(scheduler.Spec{Type: "sglang-cache-aware", Weight: 1}))
	cands := []scheduler.Candidate{cand("a", scheduler.ModeExact), cand("b", scheduler.ModeExact)}
	first := e.route(t, &scheduler.Request{Model: "m", Keys: keys(1, 10), BlockTokens: 16}, cands).Chosen.Candidate.ID
	second := e.route(t, &scheduler.Request{Model: "m", Keys: keys(500, 509), BlockTokens: 16}, cands).Chosen.Candidate.ID
	if first == second {
		t.Errorf("two cold prompts both went to %s; the second should go to the smaller tree", first)
	}
}

// TestLLMDDefaultProfile: llm-d's default profile, prefix-cache-scorer 3,
// queue-scorer 2, kv-cache-utilization-scorer 2. a was sent 8 of the
// prompt's 10 blocks; waiting queues a 4, b 0, c 2; KV usage a 0.6, b 0.2,
// c 0.
//
//	a = 3 x 0.8 + 2 x (4-4)/4 + 2 x 0.4 = 2.4 + 0   + 0.8 = 3.2
//	b = 3 x 0   + 2 x (4-0)/4 + 2 x 0.8 = 0   + 2   + 1.6 = 3.6  -> b
//	c = 3 x 0   + 2 x (4-2)/4 + 2 x 1   = 0   + 1   + 2   = 3.0
//
// With all 10 blocks sent to a, a = 3 + 0 + 0.8 = 3.8 > 3.6 -> a.
func TestLLMDDefaultProfile(t *testing.T) {
	for _, tc := range []struct {
		sent int
		want string
	}{{8, "b"}, {10, "a"}} {
		e := newEnv(t, peerConfig(
			scheduler.Spec{Type: "approx-prefix", Weight: 3, Params: json.RawMessage(`{"ignore_events": true, "ttl": "24h"}`)},
			scheduler.Spec{Type: "llmd-queue", Weight: 2}, scheduler.Spec{Type: "llmd-kv-utilization", Weight: 2}))
		prompt := keys(1, 10)
		e.route(t, &scheduler.Request{Model: "m", Keys: prompt[:tc.sent], BlockTokens: 16}, []scheduler.Candidate{cand("a", scheduler.ModeExact)})
		cands := []scheduler.Candidate{
			loaded("a", load.Load{Waiting: 4, KVUsage: 0.6}),
			loaded("b", load.Load{KVUsage: 0.2}),
			loaded("c", load.Load{Waiting: 2}),
		}
		d := e.route(t, &scheduler.Request{Model: "m", Keys: prompt, BlockTokens: 16}, cands)
		if d.Chosen.Candidate.ID != tc.want {
			t.Errorf("%d blocks sent to a: chose %s; want %s (total %g)", tc.sent, d.Chosen.Candidate.ID, tc.want, d.Chosen.Total)
		}
	}
}

// TestLLMDPreciseProfile: llm-d's precise profile, precise-prefix-cache-
// scorer 2, kv-cache-utilization-scorer 1, queue-scorer 1. Of a 10-block
// prompt a caches 8 blocks, b 7, c none. The precise scorer min-max
// normalises over the replicas holding any block: a (8-7)/(8-7) = 1,
// b 0, c (no block) 0. Waiting a 4, b 0, c 0; KV usage a 0.9, b 0.1, c 0.
//
//	a = 2 x 1 + 0.1 + 0 = 2.1  -> a
//	b = 2 x 0 + 0.9 + 1 = 1.9
//	c = 2 x 0 + 1   + 1 = 2.0
//
// (the feed's 0.001 x share adds at most 0.001.)
func TestLLMDPreciseProfile(t *testing.T) {
	e := newEnv(t, peerConfig(feedSpec, scheduler.Spec{Type: "llmd-precise-prefix", Weight: 2},
		scheduler.Spec{Type: "llmd-kv-utilization", Weight: 1}, scheduler.Spec{Type: "llmd-queue", Weight: 1}))
	prompt := keys(1, 10)
	e.store(t, "a", index.GPU, prompt[:8])
	e.store(t, "b", index.GPU, prompt[:7])
	cands := []scheduler.Candidate{
		loaded("a", load.Load{Waiting: 4, KVUsage: 0.9}),
		loaded("b", load.Load{KVUsage: 0.1}),
		loaded("c", load.Load{}),
	}
	d := e.route(t, &scheduler.Request{Model: "m", Keys: prompt, BlockTokens: 16}, cands)
	if d.Chosen.Candidate.ID != "a" || math.Abs(d.Chosen.Total-2.1-0.0008) > 1e-9 {
		t.Errorf("chose %s total %g; want a at 2.1008", d.Chosen.Candidate.ID, d.Chosen.Total)
	}
	want := map[string]float64{"a": 1, "b": 0, "c": 0}
	for id, w := range want {
		if got := scoresOf(d, "llmd-precise-prefix")[id]; got != w {
			t.Errorf("precise prefix score of %s = %g; want %g", id, got, w)
		}
	}
}

func TestLLMDScorers(t *testing.T) {
	cands := []scheduler.Candidate{
		loaded("a", load.Load{Waiting: 6, KVUsage: 0.25}),
		loaded("b", load.Load{Waiting: 2, KVUsage: 1.5}),
		loaded("c", load.Load{Waiting: 10, KVUsage: math.NaN()}),
	}
	tests := []struct {
		s    scheduler.Scorer
		want []float64
	}{
		// (10 - q) / (10 - 2)
		{&peerpolicy.QueueScorer{}, []float64{0.5, 1, 0}},
		// 1 - usage, usage clamped to [0, 1]
		{&peerpolicy.KVUtilizationScorer{}, []float64{0.75, 0, 1}},
	}
	for _, tc := range tests {
		got := make([]float64, len(cands))
		tc.s.Score(context.Background(), &scheduler.Request{}, cands, got)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("%T: scores %v; want %v", tc.s, got, tc.want)
				break
			}
		}
	}
	got := []float64{7, 7}
	(&peerpolicy.QueueScorer{}).Score(context.Background(), &scheduler.Request{}, cands[:1:1], got[:1])
	if got[0] != 1 {
		t.Errorf("a single candidate's queue score = %g; want 1", got[0])
	}
}

// TestAIBrixPrefixCache: AIBrix's prefix-cache algorithm with its defaults
// (imbalance factor 2, minimum gap 8, one standard deviation). Before each
// case a was sent the whole 10-block prompt (100%) and b its first 5
// blocks (50%).
func TestAIBrixPrefixCache(t *testing.T) {
	prompt := keys(1, 10)
	tests := []struct {
		name    string
		prompt  []uint64
		a, b, c int // requests in flight
		want    string
	}{
		// mean 0, std 0: a (100%, 0 <= 0)
		{"best match", prompt, 0, 0, 0, "a"},
		// mean 2, std sqrt(2/3) = 0.82: a's 3 > 2.82 is skipped, b (50%, 1) taken
		{"best match too busy", prompt, 3, 1, 2, "b"},
		// mean 10: 20 <= 2 x 11 = 22, no gate; std sqrt(200/3) = 8.16,
		// a's 20 > 18.16 skipped, b (10) taken
		{"no gate, stddev skips a", prompt, 20, 10, 0, "b"},
		// mean 12: 30 > 2 x 13 = 26 and 30 - 1 >= 8: gated to b (the least
		// loaded); b matches 50% and 1 <= 12 + 12.8
		{"gated to a matching replica", prompt, 30, 1, 5, "b"},
		// mean 12, gated to c, which matches nothing: least loaded, c
		{"gated, no match", prompt, 30, 5, 1, "c"},
		// nothing matches: least loaded
		{"no match", keys(500, 509), 2, 1, 3, "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, peerConfig(scheduler.Spec{Type: "aibrix-prefix-cache", Weight: 1}))
			e.route(t, &scheduler.Request{Model: "m", Keys: prompt, BlockTokens: 16}, []scheduler.Candidate{cand("a", scheduler.ModeExact)})
			e.route(t, &scheduler.Request{Model: "m", Keys: prompt[:5], BlockTokens: 16}, []scheduler.Candidate{cand("b", scheduler.ModeExact)})
			cands := []scheduler.Candidate{loaded("a", load.Load{InFlight: tc.a}), loaded("b", load.Load{InFlight: tc.b}), loaded("c", load.Load{InFlight: tc.c})}
			d := e.route(t, &scheduler.Request{Model: "m", Keys: tc.prompt, BlockTokens: 16}, cands)
			if d.Chosen.Candidate.ID != tc.want {
				t.Errorf("chose %s; want %s (scores %v)", d.Chosen.Candidate.ID, tc.want, scoresOf(d, "aibrix-prefix-cache"))
			}
		})
	}
}

func TestPeerParamsRejected(t *testing.T) {
	r := registry(t)
	bad := []scheduler.Spec{
		{Type: "dynamo-cost", Params: json.RawMessage(`{"overlap_score_weight": -1}`)},
		{Type: "sglang-cache-aware", Params: json.RawMessage(`{"cache_threshold": 1.5}`)},
		{Type: "sglang-cache-aware", Params: json.RawMessage(`{"balance_rel_threshold": 0.5}`)},
		{Type: "aibrix-prefix-cache", Params: json.RawMessage(`{"imbalance_factor": 0}`)},
		{Type: "llmd-queue", Params: json.RawMessage(`{"x": 1}`)},
	}
	for _, s := range bad {
		_, err := r.New(s, scheduler.Deps{})
		switch {
		case err == nil:
			t.Errorf("%s %s accepted", s.Type, s.Params)
		case strings.Contains(err.Error(), "unknown plugin type"):
			t.Errorf("%s %s: %v; want its params rejected, not its type", s.Type, s.Params, err)
		}
	}
}
