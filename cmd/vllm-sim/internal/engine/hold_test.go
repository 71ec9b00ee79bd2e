package engine

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// inUse counts the blocks that requests (and holds) reference.
func (h *harness) inUse(t *testing.T) int {
	t.Helper()
	var n int
	if err := h.e.Do(t.Context(), func(p *kvcache.Pool) { n = p.NumBlocks() - p.NumFree() }); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestHoldForTransferKeepsBlocksUntilRead(t *testing.T) {
	h := start(t, Config{MaxNumSeqs: 4, HoldTimeout: poll.Timeout}, 64)
	r := request(t.Context(), prompt(10, 100), 7) // blocks of 4: three
	r.ID, r.HoldForTransfer = "p1", true
	if err := h.e.Submit(r); err != nil {
		t.Fatal(err)
	}
	last := collect(t, r)[0]
	if len(last.Held) != 1 || len(last.Held[0]) != 3 {
		t.Fatalf("held %v; want three block ids of one group", last.Held)
	}
	if n := h.inUse(t); n != 3 {
		t.Fatalf("%d blocks in use after the prefill; want the 3 held", n)
	}
	if _, err := h.e.ReadHeld(t.Context(), "p1", [][]int{{last.Held[0][0], 999}}); err == nil {
		t.Fatal("read of a block the request does not hold succeeded")
	}
	if n := h.inUse(t); n != 3 {
		t.Fatalf("a refused read released the hold: %d blocks in use", n)
	}
	blocks, err := h.e.ReadHeld(t.Context(), "p1", [][]int{last.Held[0][1:]})
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].Position != 1 || !slices.Equal(blocks[1].Tokens, []uint32{108, 109}) || !blocks[0].Hashed || blocks[1].Hashed {
		t.Errorf("read %+v; want positions 1 and 2, the last partial and unhashed", blocks)
	}
	if n := h.inUse(t); n != 0 {
		t.Errorf("%d blocks in use after the read; want the hold released", n)
	}
	if _, err := h.e.ReadHeld(t.Context(), "p1", nil); !errors.Is(err, ErrNotHeld) {
		t.Errorf("second read: %v; want ErrNotHeld", err)
	}
	// Freed after the transfer, the blocks stay cached: no BlockRemoved.
	if slices.Contains(h.pub.kinds(), string(kvcache.BlockRemoved)) {
		t.Errorf("events %v: the release removed blocks", h.pub.kinds())
	}
}

func TestUnreadHoldExpires(t *testing.T) {
	var expired atomic.Int32
	h := start(t, Config{MaxNumSeqs: 4, HoldTimeout: 1, OnHoldExpired: func() { expired.Add(1) }}, 64)
	r := request(t.Context(), prompt(8, 100), 7)
	r.ID, r.HoldForTransfer = "p1", true
	if err := h.e.Submit(r); err != nil {
		t.Fatal(err)
	}
	collect(t, r)
	poll.Until(t, "the hold to expire", func() bool { return expired.Load() == 1 && h.inUse(t) == 0 })
	if _, err := h.e.ReadHeld(t.Context(), "p1", nil); !errors.Is(err, ErrNotHeld) {
		t.Errorf("read after expiry: %v; want ErrNotHeld", err)
	}
}

func TestExternalTokensAreCachedAndNotComputed(t *testing.T) {
	h := start(t, Config{MaxNumSeqs: 4}, 64)
	p := prompt(10, 100)
	r := request(t.Context(), p, 7, 8)
	r.External = len(p)
	if err := h.e.Submit(r); err != nil {
		t.Fatal(err)
	}
	toks := collect(t, r)
	if got := toks[len(toks)-1].CachedTokens; got != len(p)-1 {
		t.Errorf("cached %d; want the prompt less its last token (%d)", got, len(p)-1)
	}
	// The pulled full blocks were stored, so the prompt now hits locally.
	hit, err := h.e.LocalHit(t.Context(), request(t.Context(), p))
	if err != nil || hit != 8 {
		t.Errorf("local hit after the pull %d, %v; want 8 (two full blocks)", hit, err)
	}
	if !slices.Contains(h.pub.kinds(), string(kvcache.BlockStored)) {
		t.Errorf("events %v: no BlockStored for the pulled blocks", h.pub.kinds())
	}
}
