package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
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
	ix := fill(b, holders, keys, prompt, func(i int) int {
		if i%every != 0 {
			return 0
		}
		return max(1, blocks*(i/every+1)/on)
	})
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
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		out = ix.LookupReplicas(prompt, 1, lists[i%len(lists)], out)
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(t0))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
	found := 0
	for _, m := range out {
		if m.Blocks > 0 {
			found++
		}
	}
	if found != on {
		b.Fatalf("%d of %d candidates matched; want %d", found, len(out), on)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-µs")
}
