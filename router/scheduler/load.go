package scheduler

import (
	"context"
	"fmt"
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
	var mx Load
	for i := range cands {
		l := cands[i].Load
		mx.InFlight = max(mx.InFlight, l.InFlight)
		mx.InFlightTokens = max(mx.InFlightTokens, l.InFlightTokens)
		mx.Waiting = max(mx.Waiting, l.Waiting)
		mx.Running = max(mx.Running, l.Running)
	}
	p := s.p
	sum := p.InFlight + p.InFlightTokens + p.Waiting + p.Running + p.KVUsage
	for i := range cands {
		l := cands[i].Load
		busy := p.InFlight*ratio(float64(l.InFlight), float64(mx.InFlight)) +
			p.InFlightTokens*ratio(float64(l.InFlightTokens), float64(mx.InFlightTokens)) +
			p.Waiting*ratio(l.Waiting, mx.Waiting) +
			p.Running*ratio(l.Running, mx.Running) +
			p.KVUsage*clamp01(l.KVUsage)
		scores[i] = 1 - busy/sum
	}
}

func ratio(x, max float64) float64 {
	if max <= 0 || x <= 0 {
		return 0
	}
	return clamp01(x / max)
}

var _ Scorer = (*LoadScorer)(nil)
