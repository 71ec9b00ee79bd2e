package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

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
				for b.Loop() {
					tok.Encode(text, false)
				}
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
		b.Run(fmt.Sprintf("%s/fresh-%dtokens", model, n), func(b *testing.B) {
			for b.Loop() {
				tok.Encode(t20, false)
			}
		})
		b.Run(fmt.Sprintf("%s/cached-%dtokens", model, n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				c := NewPrefixCache(tok, 8)
				c.Encode(t19, false)
				b.StartTimer()
				c.Encode(t20, false)
			}
		})
	}
}
