package tokenizer

import (
	"container/list"
	"hash/maphash"
	"sync"
)

// PrefixCache makes turn N of a growing chat cost about its new text rather
// than the whole history, with ids identical to Tokenizer.Encode.
//
// It relies on one exact property: the tokenizer splits raw text at added
// tokens (<|im_start|>, <|eot_id|>, ...) before anything else, so at the
// start of an added token found in the text, encode(text) equals
// encode(text[:cut]) followed by encode(text[cut:]). The cache remembers,
// for recent texts, the ids before each such cut; a new text reuses the ids
// of its longest cached prefix that ends at one of its own cuts and encodes
// only the rest. Texts without added tokens are encoded in full.
//
// A PrefixCache is safe for concurrent use.
type PrefixCache struct {
	tok  *Tokenizer
	max  int
	seed maphash.Seed

	mu     sync.Mutex
	lru    *list.List              // of *cachedText, most recent first
	points map[uint64][]checkpoint // hash of text[:cut] -> checkpoints
	reused int                     // bytes of input served from the cache (tests)
}

type cachedText struct {
	text string
	ids  []uint32 // without special tokens from the post-processor
	keys []uint64 // its checkpoints' hashes, for eviction
	elem *list.Element
}

type checkpoint struct {
	entry *cachedText
	cut   int // byte offset in entry.text
	n     int // ids before cut
}

// NewPrefixCache returns a cache holding the checkpoints of up to maxTexts
// recently encoded texts (a few per concurrent conversation is plenty).
func NewPrefixCache(t *Tokenizer, maxTexts int) *PrefixCache {
	return &PrefixCache{tok: t, max: max(1, maxTexts), seed: maphash.MakeSeed(),
		lru: list.New(), points: map[uint64][]checkpoint{}}
}

// Encode returns exactly what the tokenizer's Encode returns for text.
func (c *PrefixCache) Encode(text string, addSpecialTokens bool) []uint32 {
	text = validUTF8(text)
	cuts := c.tok.rawCuts(text)
	hashes := c.prefixHashes(text, cuts)

	ids := make([]uint32, 0, len(text)/3+4)
	if addSpecialTokens {
		ids = append(ids, c.tok.post.prefix...)
	}
	head := len(ids)
	from := 0
	c.mu.Lock()
	for i := len(cuts) - 1; i >= 0 && from == 0; i-- {
		for _, cp := range c.points[hashes[i]] {
			if cp.cut == cuts[i] && cp.entry.text[:cp.cut] == text[:cuts[i]] {
				ids = append(ids, cp.entry.ids[:cp.n]...)
				from = cuts[i]
				c.reused += from
				c.lru.MoveToFront(cp.entry.elem)
				break
			}
		}
	}
	c.mu.Unlock()

	counts := make(map[int]int, len(cuts))
	reused := len(ids) - head
	ids = c.tok.appendEncodedFrom(ids, text[from:], from, func(off, n int) {
		counts[from+off] = reused + n
	})
	entry := &cachedText{text: text, ids: append([]uint32(nil), ids[head:]...)}
	if addSpecialTokens {
		ids = append(ids, c.tok.post.suffix...)
	}
	c.store(entry, cuts, hashes, counts)
	return ids
}

func (c *PrefixCache) store(e *cachedText, cuts []int, hashes []uint64, counts map[int]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, cut := range cuts {
		n, ok := counts[cut]
		if !ok || cut == 0 {
			continue // inside the reused prefix: an older entry has it
		}
		c.points[hashes[i]] = append(c.points[hashes[i]], checkpoint{entry: e, cut: cut, n: n})
		e.keys = append(e.keys, hashes[i])
	}
	if len(e.keys) == 0 {
		return
	}
	e.elem = c.lru.PushFront(e)
	for c.lru.Len() > c.max {
		old := c.lru.Remove(c.lru.Back()).(*cachedText)
		for _, k := range old.keys {
			cps := c.points[k][:0]
			for _, cp := range c.points[k] {
				if cp.entry != old {
					cps = append(cps, cp)
				}
			}
			if len(cps) == 0 {
				delete(c.points, k)
			} else {
				c.points[k] = cps
			}
		}
	}
}

// prefixHashes hashes text[:cut] for every cut in one pass.
func (c *PrefixCache) prefixHashes(text string, cuts []int) []uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	out := make([]uint64, len(cuts))
	prev := 0
	for i, cut := range cuts {
		h.WriteString(text[prev:cut])
		out[i] = h.Sum64()
		prev = cut
	}
	return out
}

// rawCuts returns the byte offsets where added tokens start in text, as
// appendEncodedFrom reports them: tokens found on the raw text, and, when
// there is no normalizer, those found in the text between them.
func (t *Tokenizer) rawCuts(text string) []int {
	var cuts []int
	var buf [16]segment
	for _, seg := range t.rawAdded.split(buf[:0], text, t.added, t.rawIdx) {
		if seg.tok >= 0 {
			cuts = append(cuts, seg.start)
			continue
		}
		if t.normalizer != nil {
			continue
		}
		var nbuf [8]segment
		for _, ns := range t.normAdd.split(nbuf[:0], text[seg.start:seg.end], t.added, t.normIdx) {
			if ns.tok >= 0 {
				cuts = append(cuts, seg.start+ns.start)
			}
		}
	}
	return cuts
}
