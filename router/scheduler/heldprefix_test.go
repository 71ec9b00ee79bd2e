package scheduler

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/kvgroups"
)

// The held-prefix credit: a full,mamba replica holding 10 full-attention
// blocks of a 12-block prompt but the Mamba state only at block 4 is
// predicted the engine's 4 blocks whatever held_prefix_credit is, and
// credited 4 plus that share of the 6 blocks past them; a replica holding
// nothing stays at 0, and a full-attention replica holding the same 10
// blocks is predicted and credited 10 as before.
func TestHeldPrefixCredit(t *testing.T) {
	ms, reg, keys := heldPrefixFixture(t, "away")
	if err := ms.For("m").Replace("plain", []index.Blocks{{Tier: index.GPU, Keys: keys[:10]}}); err != nil {
		t.Fatal(err)
	}
	ix := kvgroups.NewIndex(ms, reg)
	for _, tc := range []struct {
		share      float64
		homeCredit float64
	}{{0, 4}, {0.5, 7}, {1, 10}} {
		p := defaultPrefixParams()
		p.HeldPrefixCredit = tc.share
		if err := p.validate(); err != nil {
			t.Fatal(err)
		}
		s := newPrefixScorer(TypedName{Type: "prefix", Name: "prefix"}, p, ix, time.Now)
		cands := []Candidate{{ID: "home", Mode: ModeExact}, {ID: "away", Mode: ModeExact}, {ID: "plain", Mode: ModeExact}}
		req := &Request{Model: "m", Keys: keys, BlockTokens: 16, PromptTokens: 12*16 + 3}
		req.resetCycle(len(cands))
		scores := make([]float64, len(cands))
		s.Score(context.Background(), req, cands, scores)
		for i, want := range []struct {
			blocks int
			credit float64
		}{{4, tc.homeCredit}, {0, 0}, {10, 10}} {
			if got, _, _ := req.predicted(i); got != want.blocks {
				t.Errorf("share %g, %s: predicted %d blocks; want %d", tc.share, cands[i].ID, got, want.blocks)
			}
			if got := req.creditOf(i); math.Abs(got-want.credit) > 1e-9 {
				t.Errorf("share %g, %s: credit %g blocks; want %g", tc.share, cands[i].ID, got, want.credit)
			}
			if got := scores[i] * float64(len(keys)); math.Abs(got-want.credit) > 1e-9 {
				t.Errorf("share %g, %s: scored %g blocks; want %g", tc.share, cands[i].ID, got, want.credit)
			}
		}
	}
	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		p := defaultPrefixParams()
		p.HeldPrefixCredit = bad
		if err := p.validate(); err == nil {
			t.Errorf("held_prefix_credit %g passed validation", bad)
		}
	}
}

// heldPrefixFixture is model "m" with a 12-block prompt: replica "home"
// (full,mamba) holds its first 10 full-attention blocks and the Mamba
// state at block 4 only; the other replicas named are full,mamba
// replicas that hold nothing.
func heldPrefixFixture(t *testing.T, empty ...string) (*index.Models, *kvgroups.Registry, []uint64) {
	t.Helper()
	ms, reg := index.NewModels(index.Options{}), kvgroups.NewRegistry()
	l, err := kvgroups.ParseLayout("full,mamba", 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append([]string{"home"}, empty...) {
		reg.FromEvents(r, l.Groups, 16)
	}
	keys := make([]uint64, 12)
	for i := range keys {
		keys[i] = uint64(900 + i)
	}
	if err := ms.For("m").Replace("home", []index.Blocks{{Tier: index.GPU, Keys: keys[:10]}}); err != nil {
		t.Fatal(err)
	}
	if err := ms.For(kvgroups.IndexName("m", 1, 0)).Replace("home", []index.Blocks{{Tier: index.GPU, Keys: keys[3:4]}}); err != nil {
		t.Fatal(err)
	}
	return ms, reg, keys
}
