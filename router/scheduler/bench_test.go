package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/load"
)

// BenchmarkSchedule measures lookup + score + pick (the default config, with
// the prefix scorer's stride as given: model
// and healthy filters, prefix, approx-prefix, ttft, load and session scorers) for
// one prompt of the given length in 16-token blocks, over an index where
// every replica holds a staggered prefix of the prompt and its share of
// the background keys. Hashing the prompt is not included (internal/blockkey
// benchmarks it). p99-µs is the 99th percentile of single decisions.
func BenchmarkSchedule(b *testing.B) {
	cases := []struct{ replicas, tokens, keys, stride int }{
		{16, 32 * 1024, 1_000_000, 1},
		{16, 32 * 1024, 1_000_000, 32},
		{64, 8 * 1024, 1_000_000, 1},
		{16, 128 * 1024, 1_000_000, 32},
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("replicas=%d/tokens=%d/keys=%d/stride=%d", c.replicas, c.tokens, c.keys, c.stride), func(b *testing.B) {
			blocks := c.tokens / 16
			rng := rand.New(rand.NewPCG(1, 2))
			prompt := make([]uint64, blocks)
			for i := range prompt {
				prompt[i] = rng.Uint64()
			}
			models := index.NewModels(index.Options{})
			ix := models.For("m")
			background := make([]uint64, c.keys/c.replicas)
			cands := make([]Candidate, c.replicas)
			for r := 0; r < c.replicas; r++ {
				for i := range background {
					background[i] = rng.Uint64()
				}
				id := fmt.Sprintf("alloc-%02d/vllm", r)
				depth := blocks * (r + 1) / c.replicas
				if err := ix.Update(id, []index.Change{{Tier: index.GPU, Add: background}, {Tier: index.GPU, Add: prompt[:depth]}}); err != nil {
					b.Fatal(err)
				}
				cands[r] = Candidate{ID: id, Model: "m", Mode: ModeExact, Healthy: true, Load: load.Load{InFlight: r % 3, Waiting: float64(r % 2)}}
			}
			reg := NewRegistry()
			if err := RegisterBuiltins(reg); err != nil {
				b.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Scorers[0].Params = []byte(fmt.Sprintf(`{"stride": %d, "long_prompt_tokens": 0}`, c.stride)) // the stride as given, not the automatic one
			s, err := reg.Build(cfg, Deps{Index: models, Rand: rand.NewPCG(1, 1)})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			lat := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			req := &Request{}
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				// Reused, as the gateway reuses it (and its scratch) per request.
				req.Reset(Request{Model: "m", Keys: prompt, BlockTokens: 16})
				d, err := s.Schedule(ctx, req, cands)
				if err != nil {
					b.Fatal(err)
				}
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(t0))
				}
				if d.Chosen.CachedBlocks < blocks*3/4 {
					b.Fatalf("chose %s with %d cached blocks; want most of the prompt", d.Chosen.Candidate.ID, d.Chosen.CachedBlocks)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-µs")
		})
	}
}

// cpuTime is the process's user+system CPU time: the development machine is
// shared, so wall-clock figures include waiting for a core.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
