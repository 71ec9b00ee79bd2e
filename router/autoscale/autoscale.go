package autoscale

import (
	"math"
	"time"
)

// Demand is a model's load as one router sees it.
type Demand struct {
	// InFlight are the requests the routers have in flight to the
	// model's replicas (this router's and its peers').
	InFlight int
	// Waiting are the requests this router's admission queue holds for
	// the model because every replica is busy.
	Waiting int
	// PrefillTokens are the uncached prompt tokens the model's replicas
	// still have to prefill: the prompts in flight less the tokens the
	// router predicted cached where each was sent.
	PrefillTokens int
	// PrefillRate is a replica's prefill speed in prompt tokens a second
	// (the mean of the model's replicas' measured rates; 0: unknown).
	PrefillRate float64
}

// Policy holds the targets a replica is sized by.
type Policy struct {
	// TTFT is the time to first token the fleet should meet: the queued
	// prefill should clear within it.
	TTFT time.Duration
	// InFlight is how many requests one replica should carry at once.
	InFlight int
}

// DefaultPolicy is the router's default: a one-second TTFT target and 16
// requests a replica. A replica's batch holds more (vLLM's max_num_seqs is
// 256 by default), but each request added beyond a few tens slows every
// other one's tokens; 16 keeps inter-token latency near the engine's best
// on the GPUs the shipped jobspecs name.
func DefaultPolicy() Policy { return Policy{TTFT: time.Second, InFlight: 16} }

// Recommendation is the replica count a Demand needs, with the count each
// target asks for, so that a dashboard can say which one drives it.
type Recommendation struct {
	Replicas   int // max(ByPrefill, ByInFlight)
	ByPrefill  int
	ByInFlight int
}

// Recommend is the replica count that serves d within p's targets (see the
// package doc).
func (p Policy) Recommend(d Demand) Recommendation {
	var r Recommendation
	if clear := d.PrefillRate * p.TTFT.Seconds(); clear > 0 && d.PrefillTokens > 0 {
		r.ByPrefill = ceilDiv(float64(d.PrefillTokens), clear)
	}
	if n := max(d.InFlight, 0) + max(d.Waiting, 0); n > 0 {
		r.ByInFlight = ceilDiv(float64(n), float64(max(p.InFlight, 1)))
	}
	r.Replicas = max(r.ByPrefill, r.ByInFlight)
	return r
}

// ceilDiv is ceil(a/b) as an int, saturating at math.MaxInt32.
func ceilDiv(a, b float64) int {
	q := math.Ceil(a / b)
	if q > math.MaxInt32 || math.IsNaN(q) {
		return math.MaxInt32
	}
	return int(q)
}

// Met reports whether a time to first token met p's target.
func (p Policy) Met(ttft time.Duration) bool { return ttft <= p.TTFT }
