package scheduler

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/kvgroups"
)

// TestQueuedCredit pins what queued_credit changes: the prefix score of a
// replica whose speculative credit stands for prefill it has not answered
// yet, and nothing else. Replica "busy" was sent the prompt and has its
// prefill queued; "done" was sent it and has answered (nothing queued);
// "events" caches four of the eight blocks by KV events and was also sent
// the prompt, with its prefill queued. Every prediction, which the ttft
// scorer prices, keeps the full credit.
func TestQueuedCredit(t *testing.T) {
	prompt := keys(1, 8)
	for _, tc := range []struct {
		share float64
		// blocks each candidate's prefix score stands for
		busy, done, events float64
	}{
		{share: 1, busy: 8, done: 8, events: 8},
		{share: 0.5, busy: 4, done: 8, events: 6},
		{share: 0, busy: 0, done: 8, events: 4},
	} {
		ix := index.NewModels(index.Options{})
		if err := ix.For("m").Update("events", []index.Change{{Tier: index.GPU, Add: prompt[:4]}}); err != nil {
			t.Fatal(err)
		}
		p := defaultPrefixParams()
		p.QueuedCredit = tc.share
		if err := p.validate(); err != nil {
			t.Fatal(err)
		}
		s := newPrefixScorer(TypedName{Type: "prefix", Name: "prefix"}, p, ix, time.Now)
		cands := []Candidate{cand("busy", ModeExact), cand("done", ModeExact), cand("events", ModeExact), cand("idle", ModeExact)}
		cands[0].Load.PrefillTokens = 8 * 16
		cands[2].Load.PrefillTokens = 4 * 16
		for _, c := range cands[:3] {
			s.Routed(&Request{Model: "m", Keys: prompt}, &c)
		}
		req := &Request{Model: "m", Keys: prompt, BlockTokens: 16, PromptTokens: 8 * 16}
		req.resetCycle(len(cands))
		scores := make([]float64, len(cands))
		s.Score(context.Background(), req, cands, scores)
		for i, want := range []float64{tc.busy, tc.done, tc.events, 0} {
			if got := scores[i] * float64(len(prompt)); math.Abs(got-want) > 1e-9 {
				t.Errorf("queued_credit %g, %s: scored %g blocks; want %g", tc.share, cands[i].ID, got, want)
			}
			wantCredit := 8.0
			if i == 3 {
				wantCredit = 0
			}
			if got := req.creditOf(i); got != wantCredit {
				t.Errorf("queued_credit %g, %s: predicted credit %g blocks; want %g", tc.share, cands[i].ID, got, wantCredit)
			}
		}
	}
	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		p := defaultPrefixParams()
		p.QueuedCredit = bad
		if err := p.validate(); err == nil {
			t.Errorf("queued_credit %g passed validation", bad)
		}
	}
}

// queued_credit discounts speculation only. A full,mamba replica whose
// events show 10 full-attention blocks of a 12-block prompt and the Mamba
// state at block 4 is credited 10 by held_prefix_credit (1), all of it
// from events; with prefill queued there it keeps that score at
// queued_credit 0, while a replica credited the prompt only because it
// was routed there scores that share of its 12 blocks.
func TestQueuedCreditHeldPrefix(t *testing.T) {
	ms, reg, keys := heldPrefixFixture(t, "routed")
	for _, tc := range []struct {
		share        float64
		home, routed float64 // scored blocks
	}{{1, 10, 12}, {0.5, 10, 6}, {0, 10, 0}} {
		p := defaultPrefixParams()
		p.QueuedCredit = tc.share
		if err := p.validate(); err != nil {
			t.Fatal(err)
		}
		s := newPrefixScorer(TypedName{Type: "prefix", Name: "prefix"}, p, kvgroups.NewIndex(ms, reg), time.Now)
		cands := []Candidate{{ID: "home", Mode: ModeExact}, {ID: "routed", Mode: ModeExact}}
		for i := range cands {
			cands[i].Load.PrefillTokens = 12 * 16
		}
		s.Routed(&Request{Model: "m", Keys: keys}, &cands[1])
		req := &Request{Model: "m", Keys: keys, BlockTokens: 16, PromptTokens: 12*16 + 3}
		req.resetCycle(len(cands))
		scores := make([]float64, len(cands))
		s.Score(context.Background(), req, cands, scores)
		for i, want := range []float64{tc.home, tc.routed} {
			if got := scores[i] * float64(len(keys)); math.Abs(got-want) > 1e-9 {
				t.Errorf("queued_credit %g, %s: scored %g blocks; want %g", tc.share, cands[i].ID, got, want)
			}
		}
	}
}
