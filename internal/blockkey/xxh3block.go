package blockkey

import (
	"encoding/binary"
	"math/bits"
)

// XXH3-64 of exactly 64 bytes with a seed, as xxh3.HashSeed computes it
// for that length, written out for the router's common case: blocks of 16
// tokens are 64 bytes. The general function chooses among its input sizes
// on every call and is not inlined; with the size fixed and the loop
// around it, the loads and secret words that do not depend on the seed are
// scheduled ahead of it, and only the chain through the seed (parent to
// key to the next block's seed) remains serial. TestHash64MatchesXXH3 and
// FuzzHash64 hold it to the library's result.

// secret64 is the first 64 bytes of XXH3's default secret (kSecret in the
// XXH3 specification) as little-endian words: all that inputs of 17 to 128
// bytes read of it.
var secret64 = [8]uint64{
	0xbe4ba423396cfeb8, 0x1cad21f72c81017c, 0xdb979083e96dd4de, 0x1f67b3b7a4a44072,
	0x78e5c0cc4ee679cb, 0x2172ffcc7dd05a82, 0x8e2443f7744608b8, 0x4c263a81e69035e0,
}

// xxh3Prime1 is XXH3's PRIME64_1, by which the input length is scaled.
const xxh3Prime1 = 0x9E3779B185EBCA87

// chain64 appends the chained keys of b's 64-byte blocks (a trailing
// partial block is dropped): each block's key is XXH3-64 of its bytes,
// seeded with the key before it, starting from parent.
func chain64(dst []Key, parent Key, b []byte) []Key {
	s0, s1, s2, s3 := secret64[0], secret64[1], secret64[2], secret64[3]
	s4, s5, s6, s7 := secret64[4], secret64[5], secret64[6], secret64[7]
	seed := uint64(parent)
	for ; len(b) >= 64; b = b[64:] {
		w := b[:64:64]
		le := binary.LittleEndian
		// The 17-128-byte path: 16-byte lanes paired from both ends, each
		// folded with a 128-bit multiply against the seeded secret.
		acc := uint64(64 * xxh3Prime1 & (1<<64 - 1)) // the length times PRIME64_1, wrapped
		acc += mix(le.Uint64(w[0:])^(s0+seed), le.Uint64(w[8:])^(s1-seed))
		acc += mix(le.Uint64(w[48:])^(s2+seed), le.Uint64(w[56:])^(s3-seed))
		acc += mix(le.Uint64(w[16:])^(s4+seed), le.Uint64(w[24:])^(s5-seed))
		acc += mix(le.Uint64(w[32:])^(s6+seed), le.Uint64(w[40:])^(s7-seed))
		// XXH3's avalanche.
		acc ^= acc >> 37
		acc *= 0x165667919E3779F9
		seed = acc ^ acc>>32
		dst = append(dst, Key(seed))
	}
	return dst
}

// mix is XXH3's 128-bit multiply, folded to 64 bits.
func mix(x, y uint64) uint64 {
	hi, lo := bits.Mul64(x, y)
	return hi ^ lo
}
