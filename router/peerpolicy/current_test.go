package peerpolicy_test

import (
	"encoding/json"
	"testing"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/scheduler"
)

// The peers' current defaults (llm-d router's sticky-until-saturated
// profile, Dynamo 1.7's cost, SMG 1.9's event-driven cache_aware), as
// cmd/llmgw/internal/bench/peers.go runs them; each case is computed by
// hand in its comment.

// TestLLMDSticky: prefix-cache-affinity-filter (threshold 0.8, penalty
// 18,000 ms) feeding token-load-scorer, at 2,000 prefill tokens a second.
// Before each case a was sent blocks 1-10; the prompt is 10 blocks of 16
// tokens (160 tokens), b holds none of it.
//
//	sticky:     a holds 8/10 = 0.8 >= 0.8. TTFT a = 20,000 / 2,000 s = 10,000 ms,
//	            b 0 ms; 10,000 <= 18,000: only a stays, though b is idle  -> a
//	saturated:  a queues 40,000 tokens: 20,000 ms - 0 > 18,000, all stay;
//	            load a = 40,000 + (160 - 8 x 16) = 40,032, b = 160        -> b
//	cold:       a holds 7/10 = 0.7 < 0.8, nobody is sticky, all stay;
//	            load a = 200 + (160 - 7 x 16) = 248, b = 160              -> b
//	cold, idle: as cold with nothing queued on a: load a = 48, b = 160    -> a
func TestLLMDSticky(t *testing.T) {
	prompt8 := append(keys(1, 8), keys(50, 51)...)
	prompt7 := append(keys(1, 7), keys(60, 62)...)
	tests := []struct {
		name   string
		prompt []uint64
		queued int // a's queued prefill tokens
		want   string
	}{
		{"sticky", prompt8, 20000, "a"},
		{"saturated", prompt8, 40000, "b"},
		{"cold", prompt7, 200, "b"},
		{"cold, idle", prompt7, 0, "a"},
	}
	params := json.RawMessage(`{"peak_prefill_throughput": 2000}`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, peerConfig(scheduler.Spec{Type: "llmd-sticky", Weight: 1, Params: params}))
			e.route(t, &scheduler.Request{Model: "m", Keys: keys(1, 10), BlockTokens: 16, PromptTokens: 160}, []scheduler.Candidate{cand("a", scheduler.ModeExact)})
			cands := []scheduler.Candidate{loaded("a", load.Load{PrefillTokens: tc.queued}), loaded("b", load.Load{})}
			d := e.route(t, &scheduler.Request{Model: "m", Keys: tc.prompt, BlockTokens: 16, PromptTokens: 160}, cands)
			if d.Chosen.Candidate.ID != tc.want {
				t.Errorf("chose %s; want %s (scores %v)", d.Chosen.Candidate.ID, tc.want, scoresOf(d, "llmd-sticky"))
			}
		})
	}
}

// TestSMGCacheAware: SMG 1.9's cache_aware with KV events, defaults
// balance_abs_threshold 64, balance_rel_threshold 1.5. The prompt is 10
// blocks; loads are requests in flight.
//
//	most cached:  a caches 6, b 4, c 0; loads 5, 0, 0: 5 - 0 <= 64       -> a
//	tie on cache: a and b cache 6; loads 5, 3, 0: the less loaded        -> b
//	imbalanced:   loads 100, 30, 20: 100 - 20 = 80 > 64 and 100 > 30     -> c
//	nothing cached anywhere: loads 2, 1, 3: the least loaded             -> b
func TestSMGCacheAware(t *testing.T) {
	prompt := keys(1, 10)
	tests := []struct {
		name    string
		cachedA int
		cachedB int
		a, b, c int
		want    string
	}{
		{"most cached", 6, 4, 5, 0, 0, "a"},
		{"tie on cache", 6, 6, 5, 3, 0, "b"},
		{"imbalanced", 6, 4, 100, 30, 20, "c"},
		{"nothing cached", 0, 0, 2, 1, 3, "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, peerConfig(feedSpec, scheduler.Spec{Type: "smg-cache-aware", Weight: 1}))
			if tc.cachedA > 0 {
				e.store(t, "a", index.GPU, prompt[:tc.cachedA])
			}
			if tc.cachedB > 0 {
				e.store(t, "b", index.GPU, prompt[:tc.cachedB])
			}
			cands := []scheduler.Candidate{loaded("a", load.Load{InFlight: tc.a}), loaded("b", load.Load{InFlight: tc.b}), loaded("c", load.Load{InFlight: tc.c})}
			d := e.route(t, &scheduler.Request{Model: "m", Keys: prompt, BlockTokens: 16, PromptTokens: 160}, cands)
			if d.Chosen.Candidate.ID != tc.want {
				t.Errorf("chose %s; want %s (scores %v)", d.Chosen.Candidate.ID, tc.want, scoresOf(d, "smg-cache-aware"))
			}
		})
	}
}

// TestDynamo17Cost: Dynamo 1.7's logit, prefill_load_scale (the old
// overlap_score_weight) x max(0, queued + prompt - credit x cached) +
// decode blocks + decode_active_request_weight x active requests, on
// TestDynamoCost's case at scale 4 (tokens / 16 = blocks).
//
//	credit 1 (the default; as before 1.7):
//	  a = 4 x (2048 + 1024 - 768)/16 + 320 = 896, b = 4 x 64 + 64 = 320,
//	  c = 4 x (512 + 1024 - 1024)/16 + 128 = 256                          -> c
//	credit 0.5: c = 4 x (1536 - 512)/16 + 128 = 384, b = 320, a = 4 x 168 + 320 -> b
//	credit 1, 50 blocks a request active, c running 2: c = 256 + 100 = 356 -> b
func TestDynamo17Cost(t *testing.T) {
	tests := []struct {
		params string
		want   string
	}{
		{`{"overlap_score_weight": 4}`, "c"},
		{`{"overlap_score_weight": 4, "overlap_score_credit": 0.5}`, "b"},
		{`{"overlap_score_weight": 4, "decode_active_request_weight": 50}`, "b"},
	}
	for _, tc := range tests {
		e := newEnv(t, peerConfig(feedSpec, scheduler.Spec{Type: "dynamo-cost", Weight: 1, Params: json.RawMessage(tc.params)}))
		prompt := keys(1, 64)
		e.store(t, "a", index.GPU, prompt[:48])
		e.store(t, "c", index.GPU, prompt)
		cands := []scheduler.Candidate{
			loaded("a", load.Load{PrefillTokens: 2048, InFlightTokens: 4096}),
			loaded("b", load.Load{}),
			loaded("c", load.Load{PrefillTokens: 512, InFlightTokens: 1024, InFlight: 2}),
		}
		d := e.route(t, &scheduler.Request{Model: "m", Keys: prompt, BlockTokens: 16, PromptTokens: 1024}, cands)
		if d.Chosen.Candidate.ID != tc.want {
			t.Errorf("%s: chose %s; want %s (scores %v)", tc.params, d.Chosen.Candidate.ID, tc.want, scoresOf(d, "dynamo-cost"))
		}
	}
}
