package kvcache

import (
	"slices"
	"testing"
)

// TestCPUTierLargerBlocks plays the offloading connector with an
// offloaded block of two GPU blocks (block_size_factor 2): a CPU store goes
// out once both are full, named by the second one's hash, at twice the
// block size, without tokens or parent; a lookup loads whole CPU blocks
// from the one the GPU hit ends in, and nothing when that adds less than
// one CPU block (get_num_new_matched_tokens).
func TestCPUTierLargerBlocks(t *testing.T) {
	p, err := New(Config{NumBlocks: 8, BlockSize: bs, CPUBlocks: 4, CPUBlockSize: 2 * bs, HashSeed: "0"})
	if err != nil {
		t.Fatal(err)
	}
	a := seqOf(13, 100) // three full blocks: one CPU block of two, the third waits
	run(t, p, a)
	evs := p.TakeEvents()
	if got := kinds(evs); !slices.Equal(got, []string{"BlockStored/GPU", "BlockStored/CPU"}) {
		t.Fatalf("events %v; want the GPU store then one CPU store", got)
	}
	gpu, cpu := evs[0], evs[1]
	if len(cpu.Hashes) != 1 || cpu.Hashes[0] != gpu.Hashes[1] || cpu.BlockSize != 2*bs || len(cpu.Tokens) != 0 || cpu.Parent != nil {
		t.Errorf("CPU store %+v; want the second GPU block's hash at size %d, no tokens, no parent", cpu, 2*bs)
	}
	p.Free(a)
	for i := range 3 { // push a's blocks out of the GPU
		s := seqOf(13, uint32(1000+100*i))
		run(t, p, s)
		p.Free(s)
	}
	p.TakeEvents()
	if m := p.Lookup(seqOf(13, 100)); m.Tokens != 2*bs || m.CPUTokens != 2*bs {
		t.Errorf("a again: %d tokens, %d from CPU; want the CPU block of two: %d and %d", m.Tokens, m.CPUTokens, 2*bs, 2*bs)
	}

	c := newCPUTier(4, 2)
	h := func(n uint64) Hash { var x Hash; x[0] = byte(n); return x }
	c.index[h(2)] = c.lru.PushFront(&cpuEntry{hash: h(2)})
	c.index[h(4)] = c.lru.PushFront(&cpuEntry{hash: h(4)})
	hashes := []Hash{h(1), h(2), h(3), h(4), h(5), h(6)}
	for _, tt := range []struct{ gpu, want int }{
		{0, 4}, // two CPU blocks
		{1, 3}, // from the CPU block the GPU hit ends in
		{2, 2},
		{3, 0}, // one GPU block short of the end: less than a CPU block
		{4, 0}, // the next CPU block is not held
	} {
		if got := c.hits(hashes, tt.gpu); got != tt.want {
			t.Errorf("GPU hit of %d blocks: CPU loads %d; want %d", tt.gpu, got, tt.want)
		}
	}
}
