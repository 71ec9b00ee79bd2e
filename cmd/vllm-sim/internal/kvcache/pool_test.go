package kvcache

import (
	"errors"
	"slices"
	"testing"
)

const bs = 4

func newPool(t *testing.T, blocks, cpu int) *Pool {
	t.Helper()
	p, err := New(Config{NumBlocks: blocks, BlockSize: bs, CPUBlocks: cpu, HashSeed: "0"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func seqOf(n int, base uint32) *Seq {
	s := &Seq{}
	for i := range n {
		s.Tokens = append(s.Tokens, base+uint32(i))
	}
	return s
}

// run admits s, computes its whole prompt and returns the cached tokens.
func run(t *testing.T, p *Pool, s *Seq) int {
	t.Helper()
	m := p.Lookup(s)
	if err := p.Admit(s, m); err != nil {
		t.Fatalf("Admit: %v", err)
	}
	p.Compute(s, len(s.Tokens))
	return m.Tokens
}

func kinds(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Kind)+"/"+e.Medium)
	}
	return out
}

func TestPromptStoresFullBlocksOnly(t *testing.T) {
	p := newPool(t, 8, 0)
	s := seqOf(10, 100) // 2 full blocks + 2 tokens
	if hit := run(t, p, s); hit != 0 {
		t.Fatalf("first run hit %d tokens; want 0", hit)
	}
	evs := p.TakeEvents()
	if len(evs) != 1 || evs[0].Kind != BlockStored {
		t.Fatalf("events %v; want one BlockStored", kinds(evs))
	}
	e := evs[0]
	if len(e.Hashes) != 2 || e.Parent != nil || !slices.Equal(e.Tokens, s.Tokens[:8]) || e.Medium != MediumGPU || e.BlockSize != bs {
		t.Errorf("stored %d hashes, parent %v, tokens %v, medium %q; want 2 root blocks of the first 8 tokens on GPU", len(e.Hashes), e.Parent, e.Tokens, e.Medium)
	}
	if s.NumBlocks() != 3 {
		t.Errorf("sequence holds %d blocks; want 3", s.NumBlocks())
	}
}

func TestRepeatedPromptHitsWithoutEvents(t *testing.T) {
	p := newPool(t, 8, 0)
	a := seqOf(10, 100)
	run(t, p, a)
	p.Free(a)
	p.TakeEvents()

	b := seqOf(10, 100)
	if hit := run(t, p, b); hit != 8 {
		t.Errorf("repeat hit %d tokens; want 8", hit)
	}
	if evs := p.TakeEvents(); len(evs) != 0 {
		t.Errorf("a cache hit produced events %v; vLLM announces no hits", kinds(evs))
	}
}

// When every block of the prompt is cached, vLLM recomputes the last token,
// so the last block is recomputed and stored again under the same hash.
func TestFullyCachedPromptRecomputesLastBlock(t *testing.T) {
	p := newPool(t, 8, 0)
	a := seqOf(8, 100)
	run(t, p, a)
	first := p.TakeEvents()[0]
	p.Free(a)

	b := seqOf(8, 100)
	if hit := run(t, p, b); hit != 4 {
		t.Fatalf("hit %d tokens; want 4 (len-1 rounded down to blocks)", hit)
	}
	evs := p.TakeEvents()
	if len(evs) != 1 || len(evs[0].Hashes) != 1 || evs[0].Hashes[0] != first.Hashes[1] || *evs[0].Parent != first.Hashes[0] {
		t.Fatalf("events %+v; want one duplicate BlockStored of the second block with the first as parent", evs)
	}
	if got := len(p.cached[first.Hashes[1]]); got != 2 {
		t.Errorf("second hash backed by %d blocks; want 2", got)
	}
}

func TestEvictionOnlyOnReuseInLRUOrder(t *testing.T) {
	p := newPool(t, 4, 0)
	a := seqOf(10, 100) // blocks 0,1 full and cached, 2 partial
	run(t, p, a)
	stored := p.TakeEvents()[0].Hashes
	p.Free(a)
	if evs := p.TakeEvents(); len(evs) != 0 {
		t.Fatalf("freeing produced events %v; blocks stay cached until reused", kinds(evs))
	}
	if p.NumCached() != 2 || p.NumFree() != 4 {
		t.Fatalf("after free: %d cached, %d free; want 2 cached and all 4 free", p.NumCached(), p.NumFree())
	}

	// Needs 3 blocks: the never-used block, a's partial block, then a's
	// second (tail) block: only that one is a cached block being reused.
	b := seqOf(12, 900)
	run(t, p, b)
	evs := p.TakeEvents()
	if got := kinds(evs); !slices.Equal(got, []string{"BlockRemoved/GPU", "BlockStored/GPU"}) {
		t.Fatalf("events %v; want one BlockRemoved then the new BlockStored", got)
	}
	if evs[0].Hashes[0] != stored[1] {
		t.Errorf("evicted %x; want the tail block %x first", evs[0].Hashes[0].Uint64(), stored[1].Uint64())
	}
	if m := p.Lookup(seqOf(10, 100)); m.Tokens != 4 {
		t.Errorf("a's prefix still hits %d tokens; want its first block (4)", m.Tokens)
	}
}

func TestDecodeFilledBlocksAreCached(t *testing.T) {
	p := newPool(t, 8, 0)
	s := seqOf(5, 100)
	run(t, p, s)
	p.TakeEvents()
	// Generate tokens 5,6,7,8: the block [4,8) fills once token 7's KV is
	// computed, i.e. when the step processing it runs (NumComputed = 8).
	for i := range 4 {
		s.Tokens = append(s.Tokens, uint32(500+i))
		if err := p.Grow(s); err != nil {
			t.Fatal(err)
		}
		p.Compute(s, len(s.Tokens)-1)
	}
	evs := p.TakeEvents()
	if len(evs) != 1 || !slices.Equal(evs[0].Tokens, []uint32{104, 500, 501, 502}) {
		t.Fatalf("events %+v; want one BlockStored of the block finished by decoding", evs)
	}
}

func TestAdmitFailsCleanlyWhenFull(t *testing.T) {
	p := newPool(t, 3, 0)
	a := seqOf(9, 100) // 3 blocks
	run(t, p, a)
	b := seqOf(2, 900)
	if err := p.Admit(b, p.Lookup(b)); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Admit with no free block: %v; want ErrNoSpace", err)
	}
	if b.NumBlocks() != 0 || p.NumFree() != 0 {
		t.Errorf("failed admit left %d blocks held and %d free", b.NumBlocks(), p.NumFree())
	}
}

func TestResetRefusedWhileHeld(t *testing.T) {
	p := newPool(t, 8, 0)
	a := seqOf(9, 100)
	run(t, p, a)
	p.TakeEvents()
	if err := p.Reset(); !errors.Is(err, ErrBlocksInUse) {
		t.Fatalf("Reset while held: %v; want ErrBlocksInUse", err)
	}
	p.Free(a)
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := kinds(p.TakeEvents()); !slices.Equal(got, []string{"AllBlocksCleared/"}) {
		t.Errorf("events %v; want AllBlocksCleared", got)
	}
	if m := p.Lookup(seqOf(9, 100)); m.Tokens != 0 || p.NumCached() != 0 {
		t.Errorf("after reset: hit %d, %d cached; want nothing", m.Tokens, p.NumCached())
	}
}

func TestCPUTier(t *testing.T) {
	p := newPool(t, 2, 4)
	a := seqOf(5, 100) // one full block and a partial one
	run(t, p, a)
	evs := p.TakeEvents()
	if got := kinds(evs); !slices.Equal(got, []string{"BlockStored/GPU", "BlockStored/CPU"}) {
		t.Fatalf("events %v; want the GPU store then its CPU offload", got)
	}
	if cpu := evs[1]; len(cpu.Tokens) != 0 || cpu.Hashes[0] != evs[0].Hashes[0] || cpu.Parent != nil {
		t.Errorf("CPU store: %d tokens, hash %x, parent %v; want no tokens and the GPU block's hash", len(cpu.Tokens), cpu.Hashes[0].Uint64(), cpu.Parent)
	}
	p.Free(a)

	b := seqOf(5, 900) // pushes a's block out of GPU; it stays on CPU
	run(t, p, b)
	if got := kinds(p.TakeEvents()); !slices.Equal(got, []string{"BlockRemoved/GPU", "BlockStored/GPU", "BlockStored/CPU"}) {
		t.Fatalf("events %v", got)
	}
	p.Free(b)

	a2 := seqOf(5, 100)
	m := p.Lookup(a2)
	if m.Tokens != 4 || m.CPUTokens != 4 {
		t.Fatalf("a's prefix: %d tokens, %d from CPU; want 4 and 4", m.Tokens, m.CPUTokens)
	}
	if err := p.Admit(a2, m); err != nil {
		t.Fatal(err)
	}
	// Loading from CPU stores the block on GPU again, with its tokens; the
	// CPU copy is only touched.
	evs = p.TakeEvents()
	if got := kinds(evs); !slices.Equal(got, []string{"BlockRemoved/GPU", "BlockStored/GPU"}) || !slices.Equal(evs[1].Tokens, a2.Tokens[:4]) {
		t.Fatalf("events %v (%+v); want b's block evicted and a's reloaded on GPU", got, evs)
	}
}

func TestCPUEvictionFlushesStoresFirst(t *testing.T) {
	p := newPool(t, 8, 2)
	run(t, p, seqOf(13, 100)) // three full blocks into a two-block CPU tier
	evs := p.TakeEvents()
	got := kinds(evs)
	want := []string{"BlockStored/GPU", "BlockStored/CPU", "BlockRemoved/CPU", "BlockStored/CPU"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v; want %v", got, want)
	}
	if evs[2].Hashes[0] != evs[1].Hashes[0] || *evs[3].Parent != evs[1].Hashes[1] {
		t.Errorf("the evicted block must be the oldest one announced; the late store's parent its predecessor")
	}
}

func TestBlocksDumpMatchesEvents(t *testing.T) {
	p := newPool(t, 8, 0)
	s := seqOf(13, 100)
	run(t, p, s)
	stored := p.TakeEvents()[0]
	dump := p.Blocks()
	if len(dump) != 3 {
		t.Fatalf("dump has %d blocks; want 3", len(dump))
	}
	for i, b := range dump {
		if b.Hash != stored.Hashes[i] || !slices.Equal(b.Tokens, s.Tokens[i*bs:(i+1)*bs]) || b.RefCnt != 1 {
			t.Errorf("block %d: %+v; want hash %x with tokens %v held once", i, b, stored.Hashes[i].Uint64(), s.Tokens[i*bs:(i+1)*bs])
		}
		if (i == 0) != (b.Parent == nil) || (i > 0 && *b.Parent != stored.Hashes[i-1]) {
			t.Errorf("block %d parent %v; want the previous block's hash", i, b.Parent)
		}
	}
}

func TestHasherSeeds(t *testing.T) {
	tok := []uint32{1, 2, 3, 4}
	a, b := NewHasher("42"), NewHasher("42")
	if a.Block(nil, tok, nil) != b.Block(nil, tok, nil) {
		t.Error("same seed gave different hashes")
	}
	if a.Block(nil, tok, nil) == a.Block(nil, tok, []string{"lora1"}) {
		t.Error("LoRA name does not change the hash")
	}
	c, d := NewHasher(""), NewHasher("")
	if c.Block(nil, tok, nil) == d.Block(nil, tok, nil) {
		t.Error("two unseeded hashers agree; the root should be random")
	}
}

func TestPrefixCachingDisabled(t *testing.T) {
	p, err := New(Config{NumBlocks: 8, BlockSize: bs, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	a := seqOf(10, 100)
	run(t, p, a)
	p.Free(a)
	if hit := run(t, p, seqOf(10, 100)); hit != 0 {
		t.Errorf("hit %d tokens with prefix caching off; want 0", hit)
	}
	if evs := p.TakeEvents(); len(evs) != 0 || p.NumCached() != 0 {
		t.Errorf("events %v and %d cached blocks with prefix caching off; want none", kinds(evs), p.NumCached())
	}
}
