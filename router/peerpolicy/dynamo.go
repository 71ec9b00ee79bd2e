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
	OverlapScoreWeight float64 `json:"overlap_score_weight"`
}

func defaultDynamoParams() DynamoParams { return DynamoParams{OverlapScoreWeight: 1} }

func (p *DynamoParams) validate() error {
	if p.OverlapScoreWeight < 0 || math.IsInf(p.OverlapScoreWeight, 0) || math.IsNaN(p.OverlapScoreWeight) {
		return fmt.Errorf("overlap_score_weight %g must be a finite number >= 0", p.OverlapScoreWeight)
	}
	return nil
}

// DynamoCostScorer is Dynamo's KV router cost as a scorer, so that
// `llmgw bench` can run Dynamo's rule beside llmgw's. Dynamo gives each
// worker the logit
//
//	overlap_score_weight x prefill blocks + decode blocks
//
// where prefill blocks are the prompt blocks the worker does not cache plus
// the prefill already queued on it, and decode blocks are the blocks of
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
		prefill := bounded(float64(l.PrefillTokens)) + bounded(prompt-bounded(creditOf(req, i))*perBlock)
		decode := bounded(float64(l.InFlightTokens)) + prompt
		c := s.p.OverlapScoreWeight*prefill + decode
		scores[i] = c // the logit, until its range is known
		lo, hi = min(lo, c), max(hi, c)
	}
	minMaxFlip(scores[:len(cands)], lo, hi)
}

var (
	_ scheduler.Scorer      = (*DynamoCostScorer)(nil)
	_ scheduler.StateReader = (*DynamoCostScorer)(nil)
)
