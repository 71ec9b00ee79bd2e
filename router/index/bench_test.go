package index

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time. The development machine
// is shared, so wall-clock figures include time spent waiting for a core;
// per-CPU-second figures do not.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fill builds an index of replicas holding keys in total: replica i holds
// a run of chained random keys, plus the first depth(i) keys of prompt.
func fill(b *testing.B, replicas, keys int, prompt []uint64, depth func(i int) int) *Index {
	b.Helper()
	ix := New(Options{})
	r := rand.New(rand.NewPCG(1, 2))
	per := keys / replicas
	batch := make([]uint64, per)
	for i := 0; i < replicas; i++ {
		for j := range batch {
			batch[j] = r.Uint64()
		}
		d := min(depth(i), len(prompt))
		if err := ix.Update(fmt.Sprintf("alloc-%04d/vllm", i), []Change{{Tier: GPU, Add: batch}, {Tier: GPU, Add: prompt[:d]}}); err != nil {
			b.Fatal(err)
		}
	}
	return ix
}

func randomKeys(n int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, seed))
	ks := make([]uint64, n)
	for i := range ks {
		ks[i] = r.Uint64()
	}
	return ks
}

// BenchmarkLookup measures Lookup over a full index. Cases follow the issue's
// targets: 64 replicas and 1,000,000 keys with an 8k-token prompt (512
// blocks of 16), and 16 replicas with a 32k-token prompt (2048 blocks).
// "hit" gives one replica the whole prompt and the others staggered
// prefixes, the worst case for the walk; "miss" shares no first block.
// stride > 1 is LookupStride (8192 blocks: a 128k-token prompt).
func BenchmarkLookup(b *testing.B) {
	cases := []struct {
		replicas, keys, blocks int
		hit                    bool
		stride                 int
	}{
		{64, 1_000_000, 512, true, 1},
		{64, 1_000_000, 512, false, 1},
		{16, 1_000_000, 2048, true, 1},
		{16, 1_000_000, 2048, true, 32},
		{16, 1_000_000, 8192, true, 32},
	}
	for _, c := range cases {
		name := fmt.Sprintf("replicas=%d/keys=%d/blocks=%d/hit=%v/stride=%d", c.replicas, c.keys, c.blocks, c.hit, c.stride)
		b.Run(name, func(b *testing.B) {
			prompt := randomKeys(c.blocks, 99)
			depth := func(i int) int {
				if !c.hit {
					return 0
				}
				return c.blocks * (i + 1) / c.replicas
			}
			ix := fill(b, c.replicas, c.keys, prompt, depth)
			var buf []Match
			timeLookups(b, func(int) { buf = ix.LookupStride(prompt, c.stride, buf[:0]) })
			if c.hit && len(buf) != c.replicas {
				b.Fatalf("got %d matches; want %d", len(buf), c.replicas)
			}
		})
	}
}

// BenchmarkUpdate measures index apply throughput: adding and deleting
// keys of one replica in batches of 1024, on an index of 1,000,000 keys.
func BenchmarkUpdate(b *testing.B) {
	ix := fill(b, 64, 1_000_000, nil, func(int) int { return 0 })
	keys := randomKeys(1<<16, 7)
	b.ResetTimer()
	cpu0 := cpuTime(b)
	n := 0
	for i := 0; i < b.N; i++ {
		off := (i * 1024) % len(keys)
		batch := keys[off : off+1024]
		if err := ix.Update("alloc-00/vllm", []Change{{Tier: GPU, Add: batch}}); err != nil {
			b.Fatal(err)
		}
		if err := ix.Update("alloc-00/vllm", []Change{{Tier: GPU, Del: batch}}); err != nil {
			b.Fatal(err)
		}
		n += 2 * len(batch)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "keys/s")
	b.ReportMetric(float64(n)/(cpuTime(b)-cpu0).Seconds(), "keys/cpu-s")
}

// BenchmarkMemory reports the heap bytes per indexed key for 1,000,000
// keys spread over 64 replicas (one holder per key). The measurement is
// taken once, whatever b.N.
func BenchmarkMemory(b *testing.B) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix := fill(b, 64, 1_000_000, nil, func(int) int { return 0 })
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(ix.Stats().Keys), "bytes/key")
	runtime.KeepAlive(ix)
	for i := 0; i < b.N; i++ {
	}
}

// timeLookups runs lookup b.N times (i: the run) and reports its CPU time
// per run and the p50 and p99 of the first 65,536 runs' wall time, the
// timer stopped after.
func timeLookups(b *testing.B, lookup func(i int)) {
	lat := make([]time.Duration, 0, 1<<16)
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		lookup(i)
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(t0))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-µs")
}

// spreadPrefixes is a fill depth: every holders/on-th of holders caches a
// staggered prefix of blocks (the j-th of them the first (j+1)/on), one
// per page when holders is 4,096 and on 64; the others none of it.
func spreadPrefixes(holders, on, blocks int) func(i int) int {
	every := holders / on
	return func(i int) int {
		if i%every != 0 {
			return 0
		}
		return max(1, blocks*(i/every+1)/on)
	}
}
