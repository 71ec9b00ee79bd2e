package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/kvgroups"
)

// Speculative credit follows the engine's rule: a Mamba replica keeps
// state only where a prompt sent there ended, so a prompt that extends a
// routed one is credited the routed length, and one that only shares a
// part of it nothing; a full-attention replica is credited the shared
// part either way. The approximate scorer credits the same way.
func TestSpeculativeCreditFollowsTheRule(t *testing.T) {
	reg := kvgroups.NewRegistry()
	mamba, _ := kvgroups.ParseLayout("full,mamba", 16)
	reg.Declare("mamba", mamba)
	ix := kvgroups.NewIndex(index.NewModels(index.Options{}), reg)
	now := time.Now()
	clock := func() time.Time { return now }
	p := defaultPrefixParams()
	p.HeldPrefixCredit = 0 // the rule alone (TestHeldPrefixCredit adds the held prefix)
	prefix := newPrefixScorer(TypedName{Type: "prefix", Name: "prefix"}, p, ix, clock)
	approx := newApproxScorer(TypedName{Type: "approx-prefix", Name: "approx"}, defaultApproxParams(), clock, ix)

	keys := make([]uint64, 12)
	for i := range keys {
		keys[i] = uint64(500 + i)
	}
	cands := []Candidate{{ID: "mamba", Mode: ModeExact}, {ID: "full", Mode: ModeExact}}
	routed := &Request{Model: "m", Keys: keys[:8], BlockTokens: 16, PromptTokens: 8*16 + 3}
	for i := range cands {
		prefix.Routed(routed, &cands[i])
	}
	acands := []Candidate{{ID: "mamba", Mode: ModeApprox}, {ID: "full", Mode: ModeApprox}}
	for i := range acands {
		approx.Routed(routed, &acands[i])
	}
	diverged := append(append([]uint64(nil), keys[:4]...), 900, 901, 902, 903)
	for _, tc := range []struct {
		name       string
		keys       []uint64
		tokens     int
		mamba, all int // credited blocks
	}{
		{"extends the routed prompt", keys, 12*16 + 3, 8, 8},
		{"shares a part", diverged, 8*16 + 3, 0, 4},
		// The engine looks for at most 7 blocks of an 8-block prompt, and the
		// state is at 8: none. Full attention is credited as before, uncapped.
		{"the same prompt, block-aligned", keys[:8], 8 * 16, 0, 8},
	} {
		for _, sc := range []struct {
			name  string
			score func(*Request, []float64)
			cands []Candidate
		}{
			{"prefix", func(r *Request, s []float64) { prefix.Score(context.Background(), r, cands, s) }, cands},
			{"approx", func(r *Request, s []float64) { approx.Score(context.Background(), r, acands, s) }, acands},
		} {
			req := &Request{Model: "m", Keys: tc.keys, BlockTokens: 16, PromptTokens: tc.tokens}
			req.resetCycle(2)
			scores := make([]float64, 2)
			sc.score(req, scores)
			n := float64(len(tc.keys))
			if got := int(scores[0]*n + 0.5); got != tc.mamba {
				t.Errorf("%s, %s: mamba replica credited %d blocks; want %d", sc.name, tc.name, got, tc.mamba)
			}
			if got := int(scores[1]*n + 0.5); got != tc.all {
				t.Errorf("%s, %s: full-attention replica credited %d blocks; want %d", sc.name, tc.name, got, tc.all)
			}
		}
	}
}
