package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWalkAcrossPageBoundary is a differential test of the walk on both
// sides of 64 holders: replicas whose ranks cache prefixes of one chain
// (GPU blocks first, the CPU extending them, as vLLM evicts and offloads)
// change their state while fillers join and leave in bursts, so the slot
// table moves between one page and several; after each step every stride
// must answer what the model's exact walk answers, through Lookup and
// LookupReplicas (a fleet's sorted list, and a short one).
func TestWalkAcrossPageBoundary(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	chain := keysOf(160)[1:]
	ix, ref := New(Options{}), refIndex{}
	var fillers []string
	pages := map[bool]int{} // steps on one page, on several
	for step := range 300 {
		switch op := r.IntN(10); {
		case op < 6:
			name := fmt.Sprintf("r%d", r.IntN(6))
			bs := append(chainPrefixes(r, 0, chain), chainPrefixes(r, 1, chain)...)
			bs = bs[:2+2*r.IntN(2)] // one rank or two
			if err := ix.Replace(name, bs); err != nil {
				t.Fatal(err)
			}
			ref.replace(name, bs)
		case op < 8:
			for range 1 + r.IntN(48) {
				name := fmt.Sprintf("fill-%04d", step*64+len(fillers))
				cs := []Change{{Tier: GPU, Add: []uint64{uint64(1e6 + step*64 + len(fillers))}}}
				if r.IntN(4) == 0 {
					cs = []Change{{Tier: GPU, Add: chain[:r.IntN(len(chain))]}}
				}
				if err := ix.Update(name, cs); err != nil {
					t.Fatal(err)
				}
				ref.update(name, cs)
				fillers = append(fillers, name)
			}
		default:
			for range min(len(fillers), 1+r.IntN(48)) {
				i := r.IntN(len(fillers))
				ix.Remove(fillers[i])
				ref.remove(fillers[i])
				fillers = slices.Delete(fillers, i, i+1)
			}
		}
		pages[ix.tab.Load().onePage()]++
		start := r.IntN(len(chain) / 2)
		checkStrides(t, step, ix, ref, chain[start:start+1+r.IntN(len(chain)-start)])
	}
	if pages[true] == 0 || pages[false] == 0 {
		t.Errorf("steps on one page: %d, on several: %d; want some of each", pages[true], pages[false])
	}
}

// chainPrefixes is rank's state in TestWalkAcrossPageBoundary: a GPU
// prefix of chain and a CPU prefix at least as long.
func chainPrefixes(r *rand.Rand, rank int, chain []uint64) []Blocks {
	gpu := r.IntN(len(chain) + 1)
	cpu := gpu + r.IntN(len(chain)+1-gpu)
	return []Blocks{{Rank: rank, Tier: GPU, Keys: chain[:gpu]}, {Rank: rank, Tier: CPU, Keys: chain[:cpu]}}
}

// checkStrides compares LookupStride and LookupReplicas of prompt, for
// several strides, with the model's exact matches.
func checkStrides(t *testing.T, step int, ix *Index, ref refIndex, prompt []uint64) {
	t.Helper()
	want := ref.lookup(prompt)
	all := slices.Sorted(func(yield func(string) bool) {
		for h := range ref {
			if h.rank == 0 && !yield(h.replica) {
				return
			}
		}
	})
	short := []string{"r1", "r3", "unknown"}
	for _, stride := range []int{1, 3, 32, 1000} {
		got := map[string]Match{}
		for _, m := range ix.LookupStride(prompt, stride, nil) {
			got[m.Replica] = m
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("step %d, stride %d: LookupStride differs from the model (-want +got):\n%s", step, stride, d)
		}
		for _, names := range [][]string{all, short} {
			for i, m := range ix.LookupReplicas(prompt, stride, names, nil) {
				if m != want[names[i]] {
					t.Fatalf("step %d, stride %d: LookupReplicas(%d names)[%s] = %+v; want %+v", step, stride, len(names), names[i], m, want[names[i]])
				}
			}
		}
	}
}
