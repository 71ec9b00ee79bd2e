package peerpolicy

import (
	"context"
	"math"

	"github.com/llmgw/llmgw/router/scheduler"
)

// The scorers of llm-d's inference scheduler (the Gateway API inference
// extension's endpoint picker) that llmgw's own scorers do not already
// express, so that `llmgw bench` can run llm-d's profiles. Its
// prefix-cache-scorer (the approximate one, from the scheduler's own
// routing history) is llmgw's approx-prefix with ignore_events; see
// docs/PEER_POLICIES.md for the profiles and their weights.

// QueueScorer is llm-d's queue-scorer: the engine's waiting requests
// (vllm:num_requests_waiting) min-max normalised over the candidates, the
// shortest queue 1, the longest 0, all 1 when they are equal.
type QueueScorer struct{ name scheduler.TypedName }

func (s *QueueScorer) TypedName() scheduler.TypedName { return s.name }

func (s *QueueScorer) Score(_ context.Context, _ *scheduler.Request, cands []scheduler.Candidate, scores []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range cands {
		q := bounded(cands[i].Load.Waiting)
		scores[i] = q
		lo, hi = min(lo, q), max(hi, q)
	}
	minMaxFlip(scores[:len(cands)], lo, hi)
}

// KVUtilizationScorer is llm-d's kv-cache-utilization-scorer: 1 minus the
// engine's KV-cache usage (vllm:kv_cache_usage_perc).
type KVUtilizationScorer struct{ name scheduler.TypedName }

func (s *KVUtilizationScorer) TypedName() scheduler.TypedName { return s.name }

func (s *KVUtilizationScorer) Score(_ context.Context, _ *scheduler.Request, cands []scheduler.Candidate, scores []float64) {
	for i := range cands {
		scores[i] = 1 - clamp01(cands[i].Load.KVUsage)
	}
}

// PrefixMinMaxScorer is the scoring of llm-d's precise-prefix-cache-scorer
// over the predictions of llmgw's prefix scorer (which reads the same vLLM
// KV events, and must come first): candidates predicted to cache none of
// the prompt score 0; among the others the cached credit is min-max
// normalised, the most 1 and the least 0, all 1 when they are equal (a
// single candidate holding any of the prompt scores 1).
type PrefixMinMaxScorer struct{ name scheduler.TypedName }

func (s *PrefixMinMaxScorer) TypedName() scheduler.TypedName { return s.name }

func (s *PrefixMinMaxScorer) ReadsState() []scheduler.AnyStateKey { return predictionKeys }

func (s *PrefixMinMaxScorer) Score(_ context.Context, req *scheduler.Request, cands []scheduler.Candidate, scores []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range cands {
		c := bounded(creditOf(req, i))
		scores[i] = c
		if c > 0 {
			lo, hi = min(lo, c), max(hi, c)
		}
	}
	for i, c := range scores[:len(cands)] {
		switch {
		case c == 0:
		case hi > lo:
			scores[i] = (c - lo) / (hi - lo)
		default:
			scores[i] = 1
		}
	}
}

var (
	_ scheduler.Scorer      = (*QueueScorer)(nil)
	_ scheduler.Scorer      = (*KVUtilizationScorer)(nil)
	_ scheduler.Scorer      = (*PrefixMinMaxScorer)(nil)
	_ scheduler.StateReader = (*PrefixMinMaxScorer)(nil)
)
