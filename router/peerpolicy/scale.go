package peerpolicy

import "github.com/llmgw/llmgw/router/scheduler"

// The small numeric rules the peers' scorers share. They repeat the
// scheduler's own, unexported, so that a peer's score stays the same
// function of the candidates' load as when it lived beside llmgw's
// scorers: a scrape reporting NaN, a negative or an infinite count ranks a
// replica last rather than turning every score into NaN.

// predictionKeys is the ReadsState of the scorers that price the
// cached-block predictions (the prefix scorer's, which must come before
// them) and the WritesState of those that note their own.
var predictionKeys = []scheduler.AnyStateKey{scheduler.Predictions}

// maxReplicas bounds the replica ids a scorer keeps a count for; past it
// the counts start afresh (replica ids change only with new allocations).
// It is the bound scheduler.History keeps on its own replica ids.
const maxReplicas = 1 << 16

// creditOf is the prefill credit, in blocks, predicted for candidate i (0
// when no scorer predicted any).
func creditOf(req *scheduler.Request, i int) float64 {
	p, _ := scheduler.Predictions.Get(req, i)
	return p.Credit
}

// bounded is a count made safe to add and multiply: 0 when negative or
// NaN, at most 1e9.
func bounded(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return min(x, 1e9)
}

// clamp01 is v in [0, 1], 0 for NaN.
func clamp01(v float64) float64 {
	switch {
	case v != v || v < 0: // NaN or negative
		return 0
	case v > 1:
		return 1
	}
	return v
}

// minMaxFlip turns costs in [lo, hi] into scores: the cheapest 1, the
// dearest 0, all 1 when they are equal.
func minMaxFlip(costs []float64, lo, hi float64) {
	for i, c := range costs {
		if hi > lo {
			costs[i] = (hi - c) / (hi - lo)
		} else {
			costs[i] = 1
		}
	}
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
