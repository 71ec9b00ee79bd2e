package scalebench

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkDecision is the figure that counts for the decision at fleet
// scale, make bench-scale's decision at 64 and at 4,096 replicas in one
// run, so that their ratio is of the same minutes. The fleet is the
// sweep's (fleet): 1,000,000 indexed blocks, 64 prompts of 8,192 tokens
// taken in turn (each decision's index slots cold), each prompt held by
// 64 replicas, holder j the first (64-j)/64 of it; at 4,096 replicas the
// holders are every 64th replica (one per index page) and the other 4,032
// hold none of the prompt; no replica has a request in flight. At 64
// replicas every replica is scored; at 4,096 the 64 holders and 32
// sampled others (replicas.Set.AppendCandidatesFor). p50-µs is the median
// decision, the sweep's p50 of the same point, and cpu-p50-µs its
// thread CPU time, without waits for a core. Run it with -cpu 1.
func BenchmarkDecision(b *testing.B) {
	cfg := DefaultConfig()
	for _, n := range []int{64, 4096} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			f, err := newFleet(n, cfg.BaseBlocks, cfg.BaseTokens, cfg.Prompts, cfg.Seed)
			if err != nil {
				b.Fatal(err)
			}
			d := newDecider(f)
			ctx := context.Background()
			lat := make([]float64, 0, 1<<14)
			cpu := make([]float64, 0, 1<<14)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c0, err := threadCPU()
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := d.decide(ctx, i%len(f.prompts)); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, float64(time.Since(start).Nanoseconds())/1e3)
				c1, err := threadCPU()
				if err != nil {
					b.Fatal(err)
				}
				cpu = append(cpu, float64(c1-c0)/1e3)
				i++
			}
			b.ReportMetric(quantile(lat, 0.5), "p50-µs")
			b.ReportMetric(quantile(cpu, 0.5), "cpu-p50-µs")
		})
	}
}
