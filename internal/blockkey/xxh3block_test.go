package blockkey

import (
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

// hash64 is XXH3-64 of b[:64] with seed, through chain64.
func hash64(b []byte, seed uint64) uint64 {
	var one [1]Key
	return uint64(chain64(one[:0], Key(seed), b[:64])[0])
}

// TestHash64MatchesXXH3: the fixed-size hash is XXH3-64 for every seed,
// including the extremes where the seeded secret words wrap.
func TestHash64MatchesXXH3(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	b := make([]byte, 80)
	seeds := []uint64{0, 1, ^uint64(0), 1 << 63, secret64[0], -secret64[1]}
	for range 1000 {
		seeds = append(seeds, r.Uint64())
	}
	for i, seed := range seeds {
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		if i%3 == 0 {
			clear(b) // all-zero blocks too
		}
		if got, want := hash64(b, seed), xxh3.HashSeed(b[:64], seed); got != want {
			t.Fatalf("hash64(%x, %#x) = %#x; XXH3 says %#x", b[:64], seed, got, want)
		}
	}
}

func FuzzHash64(f *testing.F) {
	f.Add(make([]byte, 64), uint64(0))
	f.Add([]byte("llmgw/blockkey/v2 llmgw/blockkey/v2 llmgw/blockkey/v2 llmgw/blockkey"), uint64(42))
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) {
		if len(b) < 64 {
			b = append(b, make([]byte, 64-len(b))...)
		}
		if got, want := hash64(b, seed), xxh3.HashSeed(b[:64], seed); got != want {
			t.Fatalf("hash64(%x, %#x) = %#x; XXH3 says %#x", b[:64], seed, got, want)
		}
	})
}

// BenchmarkChain64 compares the fixed-size chain with the library's hash
// over the router's chain of 512 16-token blocks (an 8k-token prompt).
func BenchmarkChain64(b *testing.B) {
	data := make([]byte, 64*512)
	for i := range data {
		data[i] = byte(i * 7)
	}
	dst := make([]Key, 0, 512)
	b.Run("fixed", func(b *testing.B) {
		for b.Loop() {
			dst = chain64(dst[:0], 0, data)
		}
	})
	b.Run("xxh3", func(b *testing.B) {
		for b.Loop() {
			dst = dst[:0]
			var seed uint64
			for p := data; len(p) >= 64; p = p[64:] {
				seed = xxh3.HashSeed(p[:64], seed)
				dst = append(dst, Key(seed))
			}
		}
	})
}
