package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time. Benchmarks report it per
// op next to wall time, because the build machine is shared and wall time
// there mostly measures the neighbours; golden/bench.js reports the same
// figure for the Rust tokenizers.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPU is the calling thread's CPU time (Linux RUSAGE_THREAD); the
// caller locks its OS thread.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopCPU runs f in a b.Loop and reports CPU ns per op.
func loopCPU(b *testing.B, f func()) {
	start := cpuTime()
	n := 0
	for b.Loop() {
		f()
		n++
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
}

// benchText returns the first size bytes of the benchmark text (golden/
// bench.js encodes the same bytes with the Rust tokenizers).
func benchText(b *testing.B, size int) string {
	b.Helper()
	all, err := os.ReadFile(filepath.Join(testdataDir(), "bench.txt"))
	if err != nil {
		b.Skipf("benchmark text absent: run `make testdata`: %v", err)
	}
	if len(all) < size {
		b.Fatalf("bench.txt has %d bytes; want %d", len(all), size)
	}
	return string(all[:size])
}

// BenchmarkEncode measures single-goroutine encode throughput on about 8k
// and 32k tokens. The word cache is warm after the first iteration, as it is
// in a running router (the Rust crate caches words too).
func BenchmarkEncode(b *testing.B) {
	for _, model := range []string{"llama3_1", "qwen3", "gemma3"} {
		for _, size := range []int{32 << 10, 128 << 10} {
			text := benchText(b, size)
			tok := loadModel(b, model)
			n := len(tok.Encode(text, false))
			b.Run(fmt.Sprintf("%s/%dKiB-%dtokens", model, size>>10, n), func(b *testing.B) {
				b.SetBytes(int64(size))
				loopCPU(b, func() { tok.Encode(text, false) })
			})
			// Cold: the word cache emptied before every encode.
			b.Run(fmt.Sprintf("%s/%dKiB-%dtokens-cold", model, size>>10, n), func(b *testing.B) {
				b.SetBytes(int64(size))
				loopCPU(b, func() {
					tok.model.cache.init()
					tok.Encode(text, false)
				})
			})
		}
	}
}

// BenchmarkTurn20 compares turn 20 of a growing chat (each turn about 200
// new tokens of user text and 200 of reply) encoded fresh and through a
// PrefixCache that has seen turn 19, as a router would have.
func BenchmarkTurn20(b *testing.B) {
	all := benchText(b, 128<<10)
	var chunks []string
	for i := 0; i+800 <= len(all) && len(chunks) < 40; i += 800 {
		chunks = append(chunks, all[i:i+800])
	}
	for _, model := range []string{"llama3_1", "qwen3", "gemma3"} {
		f := chatFormats[model]
		tok := loadModel(b, model)
		turns := chatTurns(f[0], f[1], f[2], f[3], f[4], 20, chunks)
		t19, t20 := turns[18], turns[19]
		n := len(tok.Encode(t20, false))
		// Both report the encoding thread's CPU time per op (thread-cpu-ns/op),
		// which a busy machine disturbs far less than wall time.
		b.Run(fmt.Sprintf("%s/fresh-%dtokens", model, n), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var cpu time.Duration
			for b.Loop() {
				t0 := threadCPU()
				tok.Encode(t20, false)
				cpu += threadCPU() - t0
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "thread-cpu-ns/op")
		})
		b.Run(fmt.Sprintf("%s/cached-%dtokens", model, n), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// Caches that have seen turn 19 are made in batches outside the
			// timer, followed by a GC, so the setup's garbage is not
			// charged to the measured encodes.
			var cpu time.Duration
			var caches []*PrefixCache
			for b.Loop() {
				if len(caches) == 0 {
					b.StopTimer()
					for range 64 {
						c := NewPrefixCache(tok, 8)
						c.Encode(t19, false)
						caches = append(caches, c)
					}
					runtime.GC()
					b.StartTimer()
				}
				c := caches[len(caches)-1]
				caches = caches[:len(caches)-1]
				t0 := threadCPU()
				measuredEncode(c, t20)
				cpu += threadCPU() - t0
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "thread-cpu-ns/op")
		})
	}
}

// measuredEncode sets the timed call apart from the setup in CPU profiles.
//
//go:noinline
func measuredEncode(c *PrefixCache, text string) []uint32 { return c.Encode(text, false) }
