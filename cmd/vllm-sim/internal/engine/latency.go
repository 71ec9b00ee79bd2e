package engine

import (
	"context"
	"time"
)

// Latency is the simulator's cost model, shaped like a GPU forward pass:
// every scheduler step costs a base time (the inter-token latency) plus the
// prompt tokens it prefills, and the whole step slows by a load factor as the
// running batch approaches max-num-seqs. A request's TTFT is therefore its
// API overhead, its wait, and the steps until its uncached prompt tokens are
// computed: a cache hit really shortens it, and a crowded engine really
// delays everyone.
type Latency struct {
	Enabled bool
	// Overhead is spent per request before it reaches the scheduler
	// (HTTP, tokenization, the API server's queue).
	Overhead time.Duration
	// PrefillPerToken is the cost of one uncached prompt token.
	PrefillPerToken time.Duration
	// CPULoadPerToken is the cost of loading one token's KV from the CPU tier.
	CPULoadPerToken time.Duration
	// InterToken is the base cost of one step: one decode token for every
	// running sequence.
	InterToken time.Duration
	// LoadFactor multiplies step time when max-num-seqs sequences run;
	// it grows linearly from 1 with one running sequence.
	LoadFactor float64
}

// DefaultLatency is shaped like an 8B model on one H100 (the
// llm-d-inference-sim reference profile).
func DefaultLatency() Latency {
	return Latency{
		Enabled:         true,
		Overhead:        30 * time.Millisecond,
		PrefillPerToken: 250 * time.Microsecond,
		CPULoadPerToken: 25 * time.Microsecond,
		InterToken:      12 * time.Millisecond,
		LoadFactor:      2.0,
	}
}

// factor is the load slowdown with running sequences out of maxSeqs.
func (l Latency) factor(running, maxSeqs int) float64 {
	if running <= 1 || maxSeqs <= 1 {
		return 1
	}
	return 1 + (l.LoadFactor-1)*float64(min(running, maxSeqs)-1)/float64(maxSeqs-1)
}

// Step is the duration of one scheduler step.
func (l Latency) Step(prefillTokens, cpuTokens, running, maxSeqs int) time.Duration {
	if !l.Enabled {
		return 0
	}
	base := l.InterToken + time.Duration(prefillTokens)*l.PrefillPerToken + time.Duration(cpuTokens)*l.CPULoadPerToken
	return time.Duration(float64(base) * l.factor(running, maxSeqs))
}

// SleepUntil spends modelled time: it returns nil at t, or ctx's error once
// ctx is done, whichever comes first. A t already past returns ctx.Err() at
// once, so a loop of zero-cost steps still stops with its context. Both the
// engine's steps and the server's per-request overhead wait through it.
func SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
