package workload

import (
	"math/rand/v2"
	"strings"
)

// Every token of generated text is three bytes: a word is a space and two
// letters (one token) followed by zero or more three-letter chunks (one
// token each), so the simulated tokenizer splits it exactly there, and text
// of n tokens is 3n bytes whose first 3k bytes are its first k tokens.
const tokenBytes = 3

const letters = "etaoinshrdlucmfwypvbgk"

// words returns text of exactly n tokens drawn from rng.
func words(rng *rand.Rand, n int) string {
	var sb strings.Builder
	sb.Grow(n * tokenBytes)
	for n > 0 {
		w := min(n, 1+rng.IntN(3)) // tokens in this word
		sb.WriteByte(' ')
		for range w*tokenBytes - 1 {
			sb.WriteByte(letters[rng.IntN(len(letters))])
		}
		n -= w
	}
	return sb.String()
}

// blockText is the text of trace block id: tokens tokens determined by the
// id alone, so equal ids give equal blocks in every request.
func blockText(id int64, tokens int) string {
	return words(rand.New(rand.NewPCG(uint64(id), 0x6d6f6f6e63616b65)), tokens)
}

// newRand is the generator every workload draws from, seeded by its seed.
func newRand(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}
