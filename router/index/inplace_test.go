package index

import (
	"fmt"
	"testing"
)

// fullIndex is an index whose every slot but one is taken by a filler
// holder, mirrored in a model; fillers whose slot is a multiple of 64
// also hold key 1 on the GPU (so key 1's holders span pages).
func fullIndex(t *testing.T) (*Index, refIndex) {
	t.Helper()
	ix, ref := New(Options{}), refIndex{}
	for i := range MaxHolders - 1 {
		cs := []Change{{Tier: GPU, Add: []uint64{uint64(1e6 + i)}}}
		if i%64 == 0 {
			cs[0].Add = append(cs[0].Add, 1)
		}
		name := fmt.Sprintf("fill-%04d", i)
		if err := ix.Update(name, cs); err != nil {
			t.Fatal(err)
		}
		ref.update(name, cs)
	}
	return ix, ref
}

// TestReplaceInPlaceDropsEveryStaleKey: in a full index, Replace works in
// place and finds the keys a replica no longer holds among its slot's
// candidates, not by a pass over the map. Whatever put the keys there
// (stores before the lists were built, updates after, churn that
// compacts a list, a slot taken over from a removed replica), the index
// matches the model after the Replace: no stale key is left, and the
// counts agree.
func TestReplaceInPlaceDropsEveryStaleKey(t *testing.T) {
	type op struct {
		update  []Change // else replace
		replace []Blocks
		remove  bool
	}
	churn := func(n int) []op {
		var ops []op
		for i := range n {
			k := uint64(5000 + i)
			ops = append(ops, op{update: []Change{{Tier: GPU, Add: []uint64{k}}}}, op{update: []Change{{Tier: GPU, Del: []uint64{k}}}})
		}
		return append(ops, op{update: []Change{{Tier: CPU, Add: []uint64{7000}}}})
	}
	cases := []struct {
		name string
		ops  []op // on replica a, before the last Replace
	}{
		{"stored before the lists", []op{{update: []Change{{Tier: GPU, Add: seq(1, 20)}, {Tier: CPU, Add: seq(15, 30)}}}}},
		{"updated after the lists", []op{
			{replace: []Blocks{{Tier: GPU, Keys: seq(1, 10)}}}, // the last free slot
			{replace: []Blocks{{Tier: GPU, Keys: seq(2, 10)}}}, // in place: the lists are built
			{update: []Change{{Tier: GPU, Add: append(seq(40, 60), 1)}, {Tier: CPU, Add: seq(5, 8)}}},
		}},
		{"churn past a compaction", append([]op{
			{replace: []Blocks{{Tier: GPU, Keys: seq(1, 4)}}},
			{replace: []Blocks{{Tier: GPU, Keys: seq(1, 5)}}},
		}, churn(3*candidateSlack)...)},
		{"slot of a removed replica", []op{
			{replace: []Blocks{{Tier: GPU, Keys: seq(1, 10)}}},
			{replace: []Blocks{{Tier: GPU, Keys: seq(1, 12)}}},
			{remove: true},
			{update: []Change{{Tier: GPU, Add: seq(8, 12)}}},
		}},
	}
	last := []Blocks{{Tier: GPU, Keys: append(seq(9, 11), 1)}, {Tier: CPU, Keys: seq(20, 22)}}
	prompts := [][]uint64{{1}, seq(1, 30), seq(9, 11), seq(20, 22), seq(40, 60), {5000, 5001}, {7000}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ix, ref := fullIndex(t)
			for i, o := range append(c.ops, op{replace: last}) {
				var err error
				switch {
				case o.remove:
					ix.Remove("a")
					ref.remove("a")
				case o.update != nil:
					err = ix.Update("a", o.update)
					ref.update("a", o.update)
				default:
					err = ix.Replace("a", o.replace)
					ref.replace("a", o.replace)
				}
				if err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
			}
			if ix.free() != 0 || ix.cands == nil {
				t.Fatalf("%d slots free, candidates kept %v; the test needs a full index that replaced in place", ix.free(), ix.cands != nil)
			}
			for i, p := range prompts {
				checkLookups(t, i, ix, ref, p, []string{"a", "fill-0000", "fill-0064"})
				checkCounts(t, i, ix, ref, p[0])
			}
			if gpu, cpu := ix.ReplicaBlocks("a"); gpu != 4 || cpu != 3 {
				t.Errorf("ReplicaBlocks(a) = %d, %d; want 4, 3", gpu, cpu)
			}
		})
	}
}

// TestCandidatesOnlyWhileFull: the lists exist from the first in-place
// Replace until sweeps free a sixteenth of the slots.
func TestCandidatesOnlyWhileFull(t *testing.T) {
	ix, _ := fullIndex(t)
	if err := ix.Replace("a", []Blocks{{Tier: GPU, Keys: seq(1, 3)}}); err != nil {
		t.Fatal(err)
	}
	if ix.cands != nil {
		t.Fatal("candidates kept while a slot was free")
	}
	if err := ix.Replace("a", []Blocks{{Tier: GPU, Keys: seq(2, 4)}}); err != nil {
		t.Fatal(err)
	}
	if ix.cands == nil {
		t.Fatal("no candidates after a Replace in place")
	}
	for i := range MaxHolders/16 - 1 {
		ix.Remove(fmt.Sprintf("fill-%04d", i))
	}
	ix.sweepDead()
	if ix.cands == nil {
		t.Fatalf("candidates dropped with %d slots free; want them kept below %d", ix.free(), MaxHolders/16)
	}
	ix.Remove(fmt.Sprintf("fill-%04d", MaxHolders/16))
	ix.sweepDead()
	if ix.cands != nil {
		t.Errorf("candidates kept with %d slots free", ix.free())
	}
}
