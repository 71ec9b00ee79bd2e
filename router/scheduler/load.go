package scheduler

import (
	"context"
	"fmt"
	"math"

	"github.com/llmgw/llmgw/router/load"
)

// LoadParams weight the load signals; each signal is normalised by its
// maximum over the candidates (KV usage is already a fraction), so the
// weights say how much each signal matters, not its unit.
type LoadParams struct {
	InFlight       float64 `json:"in_flight"`
	InFlightTokens float64 `json:"in_flight_tokens"`
	Waiting        float64 `json:"waiting"`
	Running        float64 `json:"running"`
	KVUsage        float64 `json:"kv_usage"`
}

func defaultLoadParams() LoadParams {
	return LoadParams{InFlight: 1, InFlightTokens: 1, Waiting: 1, Running: 0.5, KVUsage: 0.5}
}

func (p *LoadParams) validate() error {
	ws := []float64{p.InFlight, p.InFlightTokens, p.Waiting, p.Running, p.KVUsage}
	sum := 0.0
	for _, w := range ws {
		if w < 0 {
			return fmt.Errorf("weights must not be negative")
		}
		sum += w
	}
	if sum == 0 {
		return fmt.Errorf("at least one weight must be positive")
	}
	return nil
}

// LoadScorer prefers the least loaded candidate: router-side requests and
// prompt tokens in flight, plus the engine's waiting and running requests
// and KV-cache usage scraped from /metrics. The least loaded candidate
// scores 1 on every normalised signal; equally idle candidates tie, so the
// picker spreads no-hit requests at random instead of piling them on one.
type LoadScorer struct {
	name TypedName
	p    LoadParams
}

func (s *LoadScorer) TypedName() TypedName { return s.name }

func (s *LoadScorer) Score(_ context.Context, _ *Request, cands []Candidate, scores []float64) {
	var mx load.Load
	for i := range cands {
		l := cands[i].Load
		mx.InFlight = max(mx.InFlight, l.InFlight)
		mx.InFlightTokens = max(mx.InFlightTokens, l.InFlightTokens)
		mx.Waiting = max(mx.Waiting, l.Waiting)
		mx.Running = max(mx.Running, l.Running)
	}
	p := s.p
	sum := p.InFlight + p.InFlightTokens + p.Waiting + p.Running + p.KVUsage
	// Each signal's weight over its maximum, so that the loop multiplies
	// instead of dividing (five divisions per candidate showed in profiles).
	inFlight, tokens := per(p.InFlight, float64(mx.InFlight)), per(p.InFlightTokens, float64(mx.InFlightTokens))
	waiting, running := per(p.Waiting, mx.Waiting), per(p.Running, mx.Running)
	for i := range cands {
		l := cands[i].Load
		busy := min(inFlight*positive(float64(l.InFlight)), p.InFlight) +
			min(tokens*positive(float64(l.InFlightTokens)), p.InFlightTokens) +
			min(waiting*positive(l.Waiting), p.Waiting) +
			min(running*positive(l.Running), p.Running) +
			p.KVUsage*clamp01(l.KVUsage)
		scores[i] = 1 - busy/sum
	}
}

// per is weight/max, or 0 when no candidate has the signal (or a scrape
// reported NaN or infinity for it).
func per(weight, max float64) float64 {
	if !(max > 0) || math.IsInf(max, 1) {
		return 0
	}
	return weight / max
}

// positive is x, or 0 when x is negative or NaN.
func positive(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return x
}

var _ Scorer = (*LoadScorer)(nil)
