package disagg

import (
	"fmt"
	"math"
)

// Threshold decides when the decode replica prefills a prompt itself: when
// it already caches at least Tokens of the prompt's tokens and at least
// Fraction of them. Either part may be zero; the threshold is never below
// one token, so a prompt nothing caches always goes to a prefill replica.
type Threshold struct {
	// Tokens is a cached-token count (0: no count required).
	Tokens int
	// Fraction is a share of the prompt's tokens, in [0, 1] (0: no share
	// required).
	Fraction float64
}

// DefaultThreshold skips the remote prefill when the decode replica caches
// 90% of the prompt: the rest is a short prefill that a transfer's round
// trip would not beat.
func DefaultThreshold() Threshold { return Threshold{Fraction: 0.9} }

// Validate reports a threshold that cannot be met or makes no sense.
func (t Threshold) Validate() error {
	if t.Tokens < 0 {
		return fmt.Errorf("pd_skip_prefill_tokens %d is negative", t.Tokens)
	}
	if !(t.Fraction >= 0 && t.Fraction <= 1) { // also refuses NaN
		return fmt.Errorf("pd_skip_prefill_fraction %g is not in [0, 1]", t.Fraction)
	}
	return nil
}

// Required is the number of cached tokens a prompt of promptTokens needs
// on the decode replica for it to prefill locally.
func (t Threshold) Required(promptTokens int) int {
	need := max(t.Tokens, 1)
	if t.Fraction > 0 && promptTokens > 0 {
		need = max(need, int(math.Ceil(t.Fraction*float64(promptTokens))))
	}
	return need
}

// SkipRemotePrefill reports whether the decode replica, predicted to cache
// cachedTokens of the prompt's promptTokens (every tier counted in full),
// should prefill the prompt itself instead of pulling it from a prefill
// replica.
func (t Threshold) SkipRemotePrefill(promptTokens, cachedTokens int) bool {
	return cachedTokens >= t.Required(promptTokens)
}
