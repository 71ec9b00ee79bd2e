package kvgroups

import (
	"testing"

	"github.com/llmgw/llmgw/router/index"
)

// Each case is OffloadingConnectorScheduler.get_num_new_matched_tokens
// worked by hand, in GPU blocks, for offloaded blocks of 4 GPU blocks
// (64 tokens over 16): gpu and cpu are the prompt's leading blocks held on
// the GPU and the further ones held only in the CPU tier; limit is how
// many blocks the engine looks at.
func TestWholeOffloaded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		gpu, cpu      int
		limit         int
		want, wantGPU int
		why           string
	}{
		{"nothing held", 0, 0, 8, 0, 0, "no hit"},
		{"CPU only, two whole blocks", 0, 8, 8, 8, 0, "start 0, offloaded blocks 0 and 1 present"},
		{"CPU only, a block and a half", 0, 6, 8, 4, 0, "offloaded block 1 is not all there"},
		{"CPU only, under one block", 0, 3, 8, 0, 0, "no offloaded block present"},
		{"GPU hit inside the last block", 5, 3, 8, 5, 5, "start 1, block 1 present: 8-5 < 4 loads nothing"},
		{"GPU hit on a block boundary", 4, 4, 8, 8, 4, "start 1, block 1 present: 8-4 >= 4"},
		{"GPU hit inside, two to gain", 2, 6, 8, 8, 2, "start 0, blocks 0 and 1 present: 8-2 >= 4"},
		{"GPU hit inside, one whole past it", 7, 5, 12, 12, 7, "start 1, blocks 1 and 2 present: 12-7 >= 4"},
		{"GPU hit inside, the next not whole", 7, 4, 12, 7, 7, "start 1, block 2 not all there: 8-7 < 4"},
		{"GPU blocks past the CPU run", 10, 0, 10, 10, 10, "start 2, no whole block 2 in 10"},
		{"the engine's limit", 0, 8, 7, 4, 0, "7 blocks looked at: one whole offloaded block"},
		{"GPU hit past the limit", 9, 0, 8, 8, 8, "the GPU hit is capped at the limit"},
	} {
		m := index.Match{Replica: "r", Blocks: tc.gpu + tc.cpu, GPUBlocks: tc.gpu, GPURun: tc.gpu}
		got := wholeOffloaded(m, 4, tc.limit)
		if got.Blocks != tc.want || got.GPURun != tc.wantGPU {
			t.Errorf("%s: %d blocks (%d on the GPU); want %d (%d): %s", tc.name, got.Blocks, got.GPUBlocks, tc.want, tc.wantGPU, tc.why)
		}
	}
}

// A lookup through the Index applies the rule to the replicas whose
// offloaded blocks are larger than their GPU blocks only, and forgets it
// with the replica.
func TestLookupOffloaded(t *testing.T) {
	t.Parallel()
	ms, reg := index.NewModels(index.Options{}), NewRegistry()
	x := NewIndex(ms, reg)
	keys := keysOf(8)
	for _, id := range []string{"whole", "plain"} {
		// Blocks 0-4 on the GPU, 0-7 in the CPU tier.
		if err := ms.For("m").Replace(id, []index.Blocks{{Tier: index.GPU, Keys: keys[:5]}, {Tier: index.CPU, Keys: keys}}); err != nil {
			t.Fatal(err)
		}
	}
	reg.SetOffload("whole", 16, 64)
	reg.SetOffload("plain", 16, 16)
	ids := []string{"whole", "plain"}
	got := x.LookupReplicasMax("m", keys, 1, len(keys), ids, nil)
	if got[0].Blocks != 5 || got[1].Blocks != 8 {
		t.Errorf("hits %d and %d; want 5 (the GPU hit: a whole offloaded block adds 3) and 8 (block by block)", got[0].Blocks, got[1].Blocks)
	}
	if m, _ := x.Explain("m", keys, len(keys), "whole"); m.Blocks != 5 {
		t.Errorf("explained %d blocks; want 5, as the lookup", m.Blocks)
	}
	if got := x.LookupReplicasRule("m", keys, 1, len(keys), RuleFullOnly, ids, nil); got[0].Blocks != 5 {
		t.Errorf("full_only rule: %d blocks; want 5", got[0].Blocks)
	}
	reg.Forget("whole")
	if reg.AnyOffload() {
		t.Error("a forgotten replica still offloads")
	}
	if got := x.LookupReplicasMax("m", keys, 1, len(keys), ids, nil); got[0].Blocks != 8 {
		t.Errorf("after Forget: %d blocks; want 8", got[0].Blocks)
	}
}
