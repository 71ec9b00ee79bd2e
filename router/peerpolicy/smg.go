package peerpolicy

import (
	"context"
	"fmt"
	"math"

	"github.com/llmgw/llmgw/router/scheduler"
)

// SMGParams tune the smg-cache-aware scorer: the gateway's load-balance
// switch, with its command-line defaults.
type SMGParams struct {
	BalanceAbsThreshold int     `json:"balance_abs_threshold"`
	BalanceRelThreshold float64 `json:"balance_rel_threshold"`
}

func defaultSMGParams() SMGParams {
	return SMGParams{BalanceAbsThreshold: 64, BalanceRelThreshold: 1.5}
}

func (p *SMGParams) validate() error {
	switch {
	case p.BalanceAbsThreshold < 0:
		return fmt.Errorf("balance_abs_threshold %d is negative", p.BalanceAbsThreshold)
	case !(p.BalanceRelThreshold >= 0) || math.IsInf(p.BalanceRelThreshold, 0):
		return fmt.Errorf("balance_rel_threshold %g must be a finite number >= 0", p.BalanceRelThreshold)
	}
	return nil
}

// SMGCacheAwareScorer is SMG's (the SGLang model gateway's) cache_aware policy
// (its default) on workers that publish KV events, the event-driven
// branch that replaced the approximate tree where events flow:
//
//  1. Imbalanced (max - min > balance_abs_threshold and max >
//     balance_rel_threshold x min, over the gateway's in-flight
//     requests): the least loaded worker.
//  2. Otherwise the worker caching the most of the prompt's blocks (by
//     the KV events), ties to the less loaded; a worker caching none of
//     it never wins this way.
//  3. When no worker caches any of it: the least loaded worker.
//
// The winner scores 1 (all tied winners, for the picker to choose among
// at random), every other worker 0. The cached blocks are the Predictions
// of llmgw's prefix scorer, which must come first; load is the router's
// requests in flight, as SMG counts its own.
type SMGCacheAwareScorer struct {
	name scheduler.TypedName
	p    SMGParams
}

func (s *SMGCacheAwareScorer) TypedName() scheduler.TypedName { return s.name }

func (s *SMGCacheAwareScorer) ReadsState() []scheduler.AnyStateKey { return predictionKeys }

func (s *SMGCacheAwareScorer) Score(_ context.Context, req *scheduler.Request, cands []scheduler.Candidate, scores []float64) {
	n := len(cands)
	if n == 0 {
		return
	}
	lo, hi := cands[0].Load.InFlight, cands[0].Load.InFlight
	for i := range cands {
		lo, hi = min(lo, cands[i].Load.InFlight), max(hi, cands[i].Load.InFlight)
	}
	imbalanced := hi-lo > s.p.BalanceAbsThreshold && float64(hi) > s.p.BalanceRelThreshold*float64(lo)
	best := -1
	if !imbalanced {
		for i := range cands {
			b := blocksOf(req, i)
			if b > 0 && (best < 0 || b > blocksOf(req, best) ||
				b == blocksOf(req, best) && cands[i].Load.InFlight < cands[best].Load.InFlight) {
				best = i
			}
		}
	}
	if best < 0 {
		for i := range cands {
			scores[i] = b2f(cands[i].Load.InFlight == lo)
		}
		return
	}
	for i := range cands {
		scores[i] = b2f(blocksOf(req, i) == blocksOf(req, best) && cands[i].Load.InFlight == cands[best].Load.InFlight)
	}
}

// blocksOf is the number of the prompt's leading blocks predicted cached
// on candidate i (0 when no scorer predicted any).
func blocksOf(req *scheduler.Request, i int) int {
	p, _ := scheduler.Predictions.Get(req, i)
	return p.Blocks
}

var (
	_ scheduler.Scorer      = (*SMGCacheAwareScorer)(nil)
	_ scheduler.StateReader = (*SMGCacheAwareScorer)(nil)
)
