package peerpolicy

import (
	"context"
	"fmt"
	"math"

	"github.com/llmgw/llmgw/router/scheduler"
)

// DynamoParams tune the dynamo-cost scorer.
type DynamoParams struct {
	// OverlapScoreWeight multiplies the prefill term of the cost (Dynamo's
	// overlap_score_weight, default 1): higher favours cached prefixes and
	// TTFT, 0 routes by decode load alone.
	// Dynamo 1.7 calls it prefill_load_scale (and maps the old name onto
	// it).
	OverlapScoreWeight float64 `json:"overlap_score_weight"`
	// OverlapScoreCredit (Dynamo 1.7, default 1) is how much of a cached
	// block is taken off the prefill term: the prefill term is
	// max(0, queued + prompt - credit x cached).
	OverlapScoreCredit float64 `json:"overlap_score_credit"`
	// DecodeActiveRequestWeight (Dynamo 1.7, default 0) adds this many
	// blocks to the logit for each request active on the worker.
	DecodeActiveRequestWeight float64 `json:"decode_active_request_weight"`
}

func defaultDynamoParams() DynamoParams {
	return DynamoParams{OverlapScoreWeight: 1, OverlapScoreCredit: 1}
}

func (p *DynamoParams) validate() error {
	for _, v := range []struct {
		name string
		x    float64
	}{{"overlap_score_weight", p.OverlapScoreWeight}, {"overlap_score_credit", p.OverlapScoreCredit},
		{"decode_active_request_weight", p.DecodeActiveRequestWeight}} {
		if v.x < 0 || math.IsInf(v.x, 0) || math.IsNaN(v.x) {
			return fmt.Errorf("%s %g must be a finite number >= 0", v.name, v.x)
		}
	}
	return nil
}

// DynamoCostScorer is Dynamo's KV router cost as a scorer, so that
// `llmgw bench` can run Dynamo's rule beside llmgw's. Dynamo gives each
// worker the logit
//
//	overlap_score_weight x prefill blocks + decode blocks
//	  + decode_active_request_weight x active requests
//
// where prefill blocks are the prefill already queued on the worker plus
// the prompt's blocks, less overlap_score_credit x the blocks it caches
// (at least 0), and decode blocks are the blocks of
// every sequence active there plus the new prompt's; the lowest logit
// wins. Here the blocks are counted in tokens (the ratio, and so the
// choice, is the same), the cached credit comes from the Predictions key
// (the prefix scorer, which must come first), the queued prefill from
// Load.PrefillTokens and the active sequences from Load.InFlightTokens.
//
// The score is the logit min-max normalised and flipped,
// (max - logit) / (max - min), so the cheapest candidate scores 1 and the
// max-score picker's softmax over it, exp(score/T), is Dynamo's softmax
// over -logit/(max-min)/T: the picker's temperature is Dynamo's
// router_temperature.
type DynamoCostScorer struct {
	name scheduler.TypedName
	p    DynamoParams
}

func (s *DynamoCostScorer) TypedName() scheduler.TypedName { return s.name }

func (s *DynamoCostScorer) ReadsState() []scheduler.AnyStateKey { return predictionKeys }

func (s *DynamoCostScorer) Score(_ context.Context, req *scheduler.Request, cands []scheduler.Candidate, scores []float64) {
	prompt, perBlock := req.PromptSize()
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range cands {
		l := &cands[i].Load
		prefill := bounded(bounded(float64(l.PrefillTokens)) + prompt - s.p.OverlapScoreCredit*bounded(creditOf(req, i))*perBlock)
		decode := bounded(float64(l.InFlightTokens)) + prompt
		c := s.p.OverlapScoreWeight*prefill + decode + s.p.DecodeActiveRequestWeight*perBlock*float64(max(l.InFlight, 0))
		scores[i] = c // the logit, until its range is known
		lo, hi = min(lo, c), max(hi, c)
	}
	minMaxFlip(scores[:len(cands)], lo, hi)
}

var (
	_ scheduler.Scorer      = (*DynamoCostScorer)(nil)
	_ scheduler.StateReader = (*DynamoCostScorer)(nil)
)
