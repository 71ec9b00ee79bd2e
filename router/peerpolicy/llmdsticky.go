package peerpolicy

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/llmgw/llmgw/router/scheduler"
)

// LLMDStickyParams tune the llmd-sticky scorer. The defaults are those of
// llm-d router's prefix-cache-affinity-filter and token-load-scorer,
// except the history's bounds (llmgw's approx-prefix TTL and cap).
type LLMDStickyParams struct {
	// AffinityThreshold is the share of the prompt's blocks a replica
	// must hold (by the routing history) to be sticky.
	AffinityThreshold float64 `json:"affinity_threshold"`
	// MaxTTFTPenaltyMs breaks stickiness when the best sticky replica's
	// estimated TTFT exceeds the best non-sticky one's by more; 0 always
	// sticks.
	MaxTTFTPenaltyMs float64 `json:"max_ttft_penalty_ms"`
	// PeakPrefillThroughput, in tokens a second, turns queued prefill
	// into an estimated TTFT: the saturation budget's one calibration.
	PeakPrefillThroughput float64 `json:"peak_prefill_throughput"`
	// QueueThresholdTokens is the token load that scores 0.
	QueueThresholdTokens float64 `json:"queue_threshold_tokens"`
	// TTL and MaxEntries bound the routing history.
	TTL        scheduler.Duration `json:"ttl"`
	MaxEntries int                `json:"max_entries"`
}

func defaultLLMDStickyParams() LLMDStickyParams {
	return LLMDStickyParams{AffinityThreshold: 0.8, MaxTTFTPenaltyMs: 18000, PeakPrefillThroughput: 15928,
		QueueThresholdTokens: 4194304, TTL: scheduler.Duration(120 * time.Second), MaxEntries: 1 << 20}
}

func (p *LLMDStickyParams) validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !(p.AffinityThreshold >= 0 && p.AffinityThreshold <= 1):
		return fmt.Errorf("affinity_threshold %g must be in [0, 1]", p.AffinityThreshold)
	case !(p.MaxTTFTPenaltyMs >= 0) || !finite(p.MaxTTFTPenaltyMs):
		return fmt.Errorf("max_ttft_penalty_ms %g must be a finite number >= 0", p.MaxTTFTPenaltyMs)
	case !(p.PeakPrefillThroughput > 0) || !finite(p.PeakPrefillThroughput):
		return fmt.Errorf("peak_prefill_throughput %g must be a finite number > 0", p.PeakPrefillThroughput)
	case !(p.QueueThresholdTokens > 0) || !finite(p.QueueThresholdTokens):
		return fmt.Errorf("queue_threshold_tokens %g must be a finite number > 0", p.QueueThresholdTokens)
	case p.TTL <= 0:
		return fmt.Errorf("ttl must be positive")
	case p.MaxEntries <= 0:
		return fmt.Errorf("max_entries must be positive")
	}
	return nil
}

// LLMDStickyScorer is llm-d router's "sticky until saturated" profile as
// one scorer, because its filter reads prefix matches that llmgw's
// scorers, not its filters, produce:
//
//  1. prefix-cache-affinity-filter: a replica is sticky when the routing
//     history holds at least affinity_threshold of the prompt's blocks
//     there. With no sticky replica every replica stays. Otherwise the
//     sticky ones stay, unless the best sticky replica's estimated TTFT
//     (its queued prefill / peak_prefill_throughput) exceeds the best
//     non-sticky one's by more than max_ttft_penalty_ms: then every
//     replica stays.
//  2. token-load-scorer over those that stay: 1 - load/threshold, load
//     being the replica's queued prefill plus this prompt's tokens it
//     does not hold, capped at queue_threshold_tokens.
//
// Replicas the filter drops score 0; those it keeps (1 + token score)/2,
// so the max-score picker takes the highest token score among them. The
// chosen replica's prompt goes into the history (llm-d's approximate
// prefix-cache producer).
type LLMDStickyScorer struct {
	name scheduler.TypedName
	p    LLMDStickyParams
	hist *scheduler.History
}

func newLLMDStickyScorer(name scheduler.TypedName, p LLMDStickyParams, now func() time.Time) *LLMDStickyScorer {
	return &LLMDStickyScorer{name: name, p: p, hist: scheduler.NewHistory(time.Duration(p.TTL), p.MaxEntries, now)}
}

func (s *LLMDStickyScorer) TypedName() scheduler.TypedName { return s.name }

func (s *LLMDStickyScorer) WritesState() []scheduler.AnyStateKey { return predictionKeys }

func (s *LLMDStickyScorer) Score(_ context.Context, req *scheduler.Request, cands []scheduler.Candidate, scores []float64) {
	n := len(cands)
	keys := req.HistoryKeys()
	matched := scores[:n] // blocks matched, until the scores are known
	clear(matched)
	s.hist.Match(keys, func(replica string, d int) {
		for i := range cands {
			if cands[i].ID == replica {
				scheduler.NotePrediction(req, i, scheduler.Prediction{Blocks: d, Credit: float64(d), Mode: scheduler.ModeApprox})
				matched[i] = float64(d)
			}
		}
	})
	sticky := make([]bool, n)
	bestSticky, bestCold, anySticky := math.Inf(1), math.Inf(1), false
	for i := range cands {
		ttft := bounded(float64(cands[i].Load.PrefillTokens)) / s.p.PeakPrefillThroughput * 1000
		sticky[i] = len(keys) > 0 && matched[i]/float64(len(keys)) >= s.p.AffinityThreshold
		if sticky[i] {
			bestSticky, anySticky = min(bestSticky, ttft), true
		} else {
			bestCold = min(bestCold, ttft)
		}
	}
	keepAll := !anySticky || s.p.MaxTTFTPenaltyMs > 0 && !math.IsInf(bestCold, 1) && bestSticky-bestCold > s.p.MaxTTFTPenaltyMs
	prompt, perBlock := req.PromptSize()
	for i := range cands {
		if !keepAll && !sticky[i] {
			scores[i] = 0
			continue
		}
		tokens := bounded(float64(cands[i].Load.PrefillTokens)) + bounded(prompt-matched[i]*perBlock)
		scores[i] = (1 + 1 - min(tokens, s.p.QueueThresholdTokens)/s.p.QueueThresholdTokens) / 2
	}
}

// Routed adds the prompt to chosen's entries in the routing history.
func (s *LLMDStickyScorer) Routed(req *scheduler.Request, chosen *scheduler.Candidate) {
	s.hist.Record(req.HistoryKeys(), chosen.ID)
}

var (
	_ scheduler.Scorer      = (*LLMDStickyScorer)(nil)
	_ scheduler.Observer    = (*LLMDStickyScorer)(nil)
	_ scheduler.StateWriter = (*LLMDStickyScorer)(nil)
)
