package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkLookupReplicasNarrowed is BenchmarkLookupHolders' spread case
// (4,096 holders, an 8k-token prompt on 64 of them, one per page) asked
// the way the scheduler asks at fleet scale: LookupReplicas over a
// narrowed candidate list, the 64 holders and 32 others drawn afresh for
// each lookup (router/replicas), sorted by name, so the list is never one
// the index remembers.
func BenchmarkLookupReplicasNarrowed(b *testing.B) {
	const holders, keys, blocks, on, sample = 4096, 1_000_000, 512, 64, 32
	prompt := randomKeys(blocks, 99)
	every := holders / on
	ix := fill(b, holders, keys, prompt, spreadPrefixes(holders, on, blocks))
	r := rand.New(rand.NewPCG(3, 3))
	lists := make([][]string, 64)
	for l := range lists {
		picked := map[int]bool{}
		for i := 0; i < holders; i += every {
			picked[i] = true
		}
		for len(picked) < on+sample {
			picked[r.IntN(holders)] = true
		}
		for i := range picked {
			lists[l] = append(lists[l], fmt.Sprintf("alloc-%04d/vllm", i))
		}
		slices.Sort(lists[l])
	}
	var out []Match
	b.ReportAllocs()
	timeLookups(b, func(i int) { out = ix.LookupReplicas(prompt, 1, lists[i%len(lists)], out) })
	found := 0
	for _, m := range out {
		if m.Blocks > 0 {
			found++
		}
	}
	if found != on {
		b.Fatalf("%d of %d candidates matched; want %d", found, len(out), on)
	}
}

// BenchmarkLookupReplicasFleet is BenchmarkLookup's first case (64
// replicas, 1,000,000 keys, an 8k-token prompt on all of them with
// staggered prefixes) asked the way the scheduler asks a fleet of that
// size: LookupReplicas over every replica, sorted by name
// (replicas.Set.ForModel), the same list on every request.
func BenchmarkLookupReplicasFleet(b *testing.B) {
	const replicas, keys, blocks = 64, 1_000_000, 512
	prompt := randomKeys(blocks, 99)
	ix := fill(b, replicas, keys, prompt, func(i int) int { return blocks * (i + 1) / replicas })
	names := make([]string, replicas)
	for i := range names {
		names[i] = fmt.Sprintf("alloc-%04d/vllm", i)
	}
	var out []Match
	b.ReportAllocs()
	timeLookups(b, func(int) { out = ix.LookupReplicas(prompt, 1, names, out) })
	for i, m := range out {
		if m.Blocks != blocks*(i+1)/replicas {
			b.Fatalf("%s: %d blocks; want %d", names[i], m.Blocks, blocks*(i+1)/replicas)
		}
	}
}
