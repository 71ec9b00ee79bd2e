package index

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkLookupHolders measures an 8k-token prompt's walk (512 blocks)
// as the number of holders in the index grows, on 1,000,000 keys. "on=64"
// caches the prompt on 64 holders with staggered prefixes, spread over the
// pages (every holders/64-th holder), which is the paged walk's worst
// layout for that many; "on=all" gives every holder a staggered prefix, so
// the walk and the result both grow with the holders.
func BenchmarkLookupHolders(b *testing.B) {
	const keys, blocks = 1_000_000, 512
	for _, c := range []struct{ holders, on int }{{64, 64}, {4096, 64}, {4096, 4096}} {
		name := fmt.Sprintf("holders=%d/on=%d", c.holders, c.on)
		if c.on == c.holders {
			name = fmt.Sprintf("holders=%d/on=all", c.holders)
		}
		b.Run(name, func(b *testing.B) {
			prompt := randomKeys(blocks, 99)
			ix := fill(b, c.holders, keys, prompt, spreadPrefixes(c.holders, c.on, blocks))
			var buf []Match
			b.ReportAllocs()
			timeLookups(b, func(int) { buf = ix.LookupStride(prompt, 1, buf[:0]) })
			if len(buf) != c.on {
				b.Fatalf("got %d matches; want %d", len(buf), c.on)
			}
		})
	}
}

// BenchmarkMemoryHolders reports the heap bytes per indexed key for 1M and
// 10M keys over 64 and 4,096 holders (each key held by one holder, the
// first 512 of a prompt by staggered holders). Measured once, whatever
// b.N; the 10M cases need about 1 GB.
func BenchmarkMemoryHolders(b *testing.B) {
	for _, c := range []struct{ holders, keys int }{{64, 1_000_000}, {4096, 1_000_000}, {64, 10_000_000}, {4096, 10_000_000}} {
		b.Run(fmt.Sprintf("holders=%d/keys=%d", c.holders, c.keys), func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			prompt := randomKeys(512, 99)
			ix := fill(b, c.holders, c.keys, prompt, func(i int) int { return 512 * (i + 1) / c.holders })
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(ix.Stats().Keys), "bytes/key")
			if got := ix.Stats(); got.Holders != c.holders {
				b.Fatalf("holders = %d; want %d", got.Holders, c.holders)
			}
			runtime.KeepAlive(ix)
			for i := 0; i < b.N; i++ {
			}
		})
	}
}

// BenchmarkUpdateShared measures the writer on keys held across pages:
// an index of 4,096 holders and 1,000,000 keys whose 512 prompt keys are
// held by 64 holders one per page (as BenchmarkLookupHolders' spread
// case), and a holder of yet another page storing and then removing
// those keys, in one batch each, so every change edits a key's holders
// of other pages.
func BenchmarkUpdateShared(b *testing.B) {
	const holders, keys, blocks, on = 4096, 1_000_000, 512, 64
	prompt := randomKeys(blocks, 99)
	every := holders / on
	ix := fill(b, holders, keys, prompt, spreadPrefixes(holders, on, blocks))
	name := fmt.Sprintf("alloc-%04d/vllm", every/2) // slot 32: page 0, not a holder of the prompt
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	n := 0
	for i := 0; i < b.N; i++ {
		if err := ix.Update(name, []Change{{Tier: GPU, Add: prompt}}); err != nil {
			b.Fatal(err)
		}
		if err := ix.Update(name, []Change{{Tier: GPU, Del: prompt}}); err != nil {
			b.Fatal(err)
		}
		n += 2 * len(prompt)
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/(cpuTime(b)-cpu0).Seconds(), "keys/cpu-s")
}
