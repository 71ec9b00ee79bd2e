package scalebench

import (
	"math/rand/v2"

	"github.com/llmgw/llmgw/internal/blockkey"
)

// lineWords is one cache line of uint32 words: the chase's node size, so
// every load is its own line.
const lineWords = 64 / 4

// chase is the floor's memory half: a random cycle over cache-line nodes
// filling a working set, each node holding the index of the next, so each
// step is one load that depends on the one before (no prefetcher or
// out-of-order window can overlap them). It stands for the index walk's
// probes: one slot each, at a random place in tables of the same size.
type chase struct {
	next []uint32
	pos  uint32
}

// newChase builds a single random cycle (Sattolo's algorithm) over
// bytes/64 nodes.
func newChase(bytes uint64, seed uint64) *chase {
	nodes := max(2, int(bytes/64))
	rng := rand.New(rand.NewPCG(seed, 3))
	perm := make([]uint32, nodes)
	for i := range perm {
		perm[i] = uint32(i)
	}
	for i := nodes - 1; i > 0; i-- {
		j := rng.IntN(i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	c := &chase{next: make([]uint32, nodes*lineWords)}
	// perm as a cycle: node perm[i] points to perm[i+1].
	for i := range nodes {
		c.next[int(perm[i])*lineWords] = perm[(i+1)%nodes] * lineWords
	}
	return c
}

// walk makes n dependent loads, going on from where the last walk ended
// (so its lines are not the ones just read), and returns where it is.
func (c *chase) walk(n int) uint32 {
	p := c.pos
	next := c.next
	for range n {
		p = next[p]
	}
	c.pos = p
	return p
}

// gather makes one load from each node of at, independent of one another
// (the addresses are known up front), so the core overlaps their misses as
// far as it can: the floor of a walk that touches its slots ahead.
func (c *chase) gather(at []uint32) uint32 {
	var sum uint32
	next := c.next
	for _, i := range at {
		sum += next[i]
	}
	return sum
}

// randomNodes is n random node offsets into c.
func (c *chase) randomNodes(n int, rng *rand.Rand) []uint32 {
	nodes := uint32(len(c.next) / lineWords)
	out := make([]uint32, n)
	for i := range out {
		out[i] = rng.Uint32N(nodes) * lineWords
	}
	return out
}

// hashPrompt is the floor's compute half: the prompt's block keys, as
// the decision hashes them.
func hashPrompt(dst []blockkey.Key, tokens []uint32) []blockkey.Key {
	return blockkey.PromptKeys(dst[:0], "", "", tokens, blockSize)
}
