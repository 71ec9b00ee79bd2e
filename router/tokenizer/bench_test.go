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
