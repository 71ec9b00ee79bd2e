package peerpolicy

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/llmgw/llmgw/router/scheduler"
)

// AIBrixParams tune the aibrix-prefix-cache scorer. The defaults are
// AIBrix's (its AIBRIX_PREFIX_CACHE_* environment variables), except the
// history's TTL, llmgw's approx-prefix default.
type AIBrixParams struct {
	// ImbalanceFactor and ImbalanceMinGap gate the prefix match: when the
	// busiest replica runs more than factor x (mean + 1) requests and at
	// least min_gap more than the least busy, only the least busy replicas
	// are considered.
	ImbalanceFactor float64 `json:"imbalance_factor"`
	ImbalanceMinGap int     `json:"imbalance_min_gap"`
	// StdDevFactor: a matching replica is taken only while its requests
	// are at most mean + factor x standard deviation.
	StdDevFactor float64 `json:"stddev_factor"`
	// TTL and MaxEntries bound the prefix table (the routing history).
	TTL        scheduler.Duration `json:"ttl"`
	MaxEntries int                `json:"max_entries"`
}

func defaultAIBrixParams() AIBrixParams {
	return AIBrixParams{ImbalanceFactor: 2, ImbalanceMinGap: 8, StdDevFactor: 1, TTL: scheduler.Duration(120 * time.Second), MaxEntries: 1 << 20}
}

func (p *AIBrixParams) validate() error {
	switch {
	case !(p.ImbalanceFactor > 0) || math.IsInf(p.ImbalanceFactor, 0):
		return fmt.Errorf("imbalance_factor %g must be a finite number > 0", p.ImbalanceFactor)
	case p.ImbalanceMinGap < 0:
		return fmt.Errorf("imbalance_min_gap %d is negative", p.ImbalanceMinGap)
	case !(p.StdDevFactor >= 0) || math.IsInf(p.StdDevFactor, 0):
		return fmt.Errorf("stddev_factor %g must be a finite number >= 0", p.StdDevFactor)
	case p.TTL <= 0:
		return fmt.Errorf("ttl must be positive")
	case p.MaxEntries <= 0:
		return fmt.Errorf("max_entries must be positive")
	}
	return nil
}

// AIBrixPrefixScorer is AIBrix's prefix-cache routing algorithm as one
// scorer: it makes AIBrix's decision and scores the replica it would pick
// 1 (several when they tie, for the picker to choose at random, as AIBrix
// shuffles), every other 0. Load is the router's requests in flight to
// each replica (AIBrix counts its gateway's running requests).
//
//  1. If the load is severely imbalanced (max > imbalance_factor x
//     (mean + 1) and max - min >= imbalance_min_gap), only the least loaded
//     replicas are considered.
//  2. Among those, the replicas the prefix table says hold part of the
//     prompt are ranked by match percent (whole percent of the prompt's
//     blocks), highest first, then by load, lowest first; the first whose
//     load is at most mean + stddev_factor x standard deviation (over all
//     candidates) wins.
//  3. Otherwise the least loaded replica wins.
//
// The chosen replica's prompt goes into the table. AIBrix's table hashes
// blocks of the prompt's characters (its default tokenizer); llmgw's
// routing history holds prompt blocks (token blocks with a tokenizer, text
// chunks without).
type AIBrixPrefixScorer struct {
	name scheduler.TypedName
	p    AIBrixParams
	hist *scheduler.History
}

func newAIBrixScorer(name scheduler.TypedName, p AIBrixParams, now func() time.Time) *AIBrixPrefixScorer {
	return &AIBrixPrefixScorer{name: name, p: p, hist: scheduler.NewHistory(time.Duration(p.TTL), p.MaxEntries, now)}
}

func (s *AIBrixPrefixScorer) TypedName() scheduler.TypedName { return s.name }

func (s *AIBrixPrefixScorer) WritesState() []scheduler.AnyStateKey { return predictionKeys }

func (s *AIBrixPrefixScorer) Score(_ context.Context, req *scheduler.Request, cands []scheduler.Candidate, scores []float64) {
	n := len(cands)
	if n == 0 {
		return
	}
	lo, hi, sum := cands[0].Load.InFlight, cands[0].Load.InFlight, 0
	for i := range cands {
		l := cands[i].Load.InFlight
		lo, hi, sum = min(lo, l), max(hi, l), sum+l
	}
	mean := float64(sum) / float64(n)
	variance := 0.0
	for i := range cands {
		d := float64(cands[i].Load.InFlight) - mean
		variance += d * d
	}
	limit := mean + s.p.StdDevFactor*math.Sqrt(variance/float64(n))
	gated := float64(hi) > s.p.ImbalanceFactor*(mean+1) && hi-lo >= s.p.ImbalanceMinGap

	// pct[i] is candidate i's match percent, -1 where it is not eligible.
	pct := scores[:n]
	for i := range pct {
		pct[i] = 0
		if gated && cands[i].Load.InFlight != lo {
			pct[i] = -1
		}
	}
	keys := req.HistoryKeys()
	s.hist.Match(keys, func(replica string, d int) {
		for i := range cands {
			if cands[i].ID == replica {
				scheduler.NotePrediction(req, i, scheduler.Prediction{Blocks: d, Credit: float64(d), Mode: scheduler.ModeApprox})
				if pct[i] >= 0 {
					pct[i] = float64(d * 100 / len(keys))
				}
			}
		}
	})
	best := -1 // the winning candidate among the matches
	for i := range cands {
		l := cands[i].Load.InFlight
		if pct[i] <= 0 || float64(l) > limit {
			continue
		}
		if best < 0 || pct[i] > pct[best] || pct[i] == pct[best] && l < cands[best].Load.InFlight {
			best = i
		}
	}
	if best >= 0 {
		p, l := pct[best], cands[best].Load.InFlight
		for i := range cands {
			scores[i] = b2f(pct[i] == p && cands[i].Load.InFlight == l)
		}
		return
	}
	for i := range cands {
		scores[i] = b2f(cands[i].Load.InFlight == lo)
	}
}

// Routed adds the prompt to chosen's entries in the prefix table.
func (s *AIBrixPrefixScorer) Routed(req *scheduler.Request, chosen *scheduler.Candidate) {
	s.hist.Record(req.HistoryKeys(), chosen.ID)
}

var (
	_ scheduler.Scorer      = (*AIBrixPrefixScorer)(nil)
	_ scheduler.Observer    = (*AIBrixPrefixScorer)(nil)
	_ scheduler.StateWriter = (*AIBrixPrefixScorer)(nil)
)
