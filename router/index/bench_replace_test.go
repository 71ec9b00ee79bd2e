package index

import (
	"fmt"
	"testing"
)

// BenchmarkReplaceFleet applies a fleet's snapshot to an index: Replace
// for every replica, each holding its own 256 keys plus the first keys of
// a prompt the fleet shares. "join" is a router that starts (or takes a
// model over) and fills an empty index; "resync" applies the next
// snapshot to an index that already holds the fleet (every replica's own
// keys move on by half). It reports ns per whole snapshot and per
// replica: applying a snapshot must cost O(replicas), a flat ns/replica.
// cpu-ns/op is the process's CPU time per snapshot (the writer's and the
// garbage collector's), which on a shared machine does not count the
// time spent waiting for a core. At 4,096 replicas every slot is taken
// and resync's Replace works in place (inplace.go).
func BenchmarkReplaceFleet(b *testing.B) {
	for _, mode := range []string{"join", "resync"} {
		for _, n := range []int{64, 256, 1024, 2048, 4096} {
			b.Run(fmt.Sprintf("%s/replicas=%d", mode, n), func(b *testing.B) {
				benchReplaceFleet(b, n, mode == "resync")
			})
		}
	}
}

// fleetSnapshot is replica i's state in snapshot gen: 256 keys of its
// own (half of them shared with the previous generation) and the first
// 64 keys of prompt.
func fleetSnapshot(i, gen int, prompt []uint64) []Blocks {
	const own, shared = 256, 64
	keys := make([]uint64, 0, own+shared)
	for j := range own {
		keys = append(keys, uint64(i)<<32|uint64(gen*own/2+j)+1)
	}
	return []Blocks{{Rank: 0, Tier: GPU, Keys: append(keys, prompt[:shared]...)}}
}

func benchReplaceFleet(b *testing.B, n int, resync bool) {
	prompt := randomKeys(64, 7)
	names := make([]string, n)
	snaps := make([][][]Blocks, 2)
	for g := range snaps {
		snaps[g] = make([][]Blocks, n)
		for i := range n {
			names[i] = fmt.Sprintf("alloc-%04d/vllm", i)
			snaps[g][i] = fleetSnapshot(i, g, prompt)
		}
	}
	apply := func(ix *Index, g int) {
		for i, name := range names {
			if err := ix.Replace(name, snaps[g][i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	var ix *Index
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		if !resync || ix == nil {
			b.StopTimer()
			ix = New(Options{})
			if resync {
				apply(ix, 1)
			}
			b.StartTimer()
		}
		apply(ix, it%2)
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	if h := ix.Stats().Holders; h != n {
		b.Fatalf("%d holders after the snapshot; want %d", h, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/replica")
}
