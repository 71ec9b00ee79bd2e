package tokenizer

import (
	"container/list"
	"sort"
	"sync"
)

// PrefixCache makes turn N of a growing chat cost about its new text rather
// than the whole history, with ids identical to Tokenizer.Encode.
//
// It relies on one exact property: the tokenizer splits raw text at added
// tokens (<|im_start|>, <|eot_id|>, ...) before anything else, so where an
// added token starts ("a cut"), encode(text) is encode(text[:cut]) followed
// by encode(text[cut:]). Whether a position is a cut depends only on the
// text before it and a few bytes after it: the longest added token plus a
// character for single_word (twice the longest token when tokens matched on
// raw text can end the segment in which normalized ones are matched). The cache remembers recent texts with their
// cuts and the number of ids before each; a new text takes the ids up to the
// last cut of a cached text that it shares, with that margin, and encodes
// only the rest. Texts without added tokens are encoded in full.
//
// A PrefixCache is safe for concurrent use.
type PrefixCache struct {
	tok    *Tokenizer
	max    int
	margin int // bytes after a cut that must match too

	mu     sync.Mutex
	lru    *list.List               // of *cachedText, most recent first
	byHead map[string][]*cachedText // first headLen bytes -> texts
	reused int                      // bytes of input served from the cache (tests)
}

// headLen is how many leading bytes index the cached texts. Shorter texts
// are not worth caching.
const headLen = 32

type cachedText struct {
	text   string
	ids    []uint32 // without the post-processor's special tokens
	cuts   []int    // ascending byte offsets of cuts, 0 excluded
	counts []int    // ids before each cut
	elem   *list.Element
}

// NewPrefixCache returns a cache holding up to maxTexts recently encoded
// texts (a few per concurrent conversation is plenty). Memory is bounded by
// about maxTexts × (text bytes + 4 bytes per id).
func NewPrefixCache(t *Tokenizer, maxTexts int) *PrefixCache {
	longest := 0
	for _, a := range t.added {
		longest = max(longest, len(a.content))
	}
	margin := longest + 4
	if t.normalizer == nil && len(t.rawIdx) > 0 && len(t.normIdx) > 0 {
		margin = 2*longest + 8
	}
	return &PrefixCache{tok: t, max: max(1, maxTexts), margin: margin,
		lru: list.New(), byHead: map[string][]*cachedText{}}
}

// Encode returns exactly what the tokenizer's Encode returns for text.
func (c *PrefixCache) Encode(text string, addSpecialTokens bool) []uint32 {
	text = validUTF8(text)
	ids := make([]uint32, 0, len(text)/3+4)
	if addSpecialTokens {
		ids = append(ids, c.tok.post.prefix...)
	}
	head := len(ids)

	e := &cachedText{text: text}
	from := 0
	if len(text) >= headLen {
		c.mu.Lock()
		if best, k := c.longestLocked(text); best != nil {
			from = best.cuts[k]
			ids = append(ids, best.ids[:best.counts[k]]...)
			e.cuts = append(e.cuts, best.cuts[:k]...)
			e.counts = append(e.counts, best.counts[:k]...)
			c.reused += from
			c.lru.MoveToFront(best.elem)
		}
		c.mu.Unlock()
	}

	reused := len(ids) - head
	ids = c.tok.appendEncodedFrom(ids, text[from:], from, func(off, n int) {
		if from+off > 0 {
			e.cuts = append(e.cuts, from+off)
			e.counts = append(e.counts, reused+n)
		}
	})
	if len(text) >= headLen && len(e.cuts) > 0 {
		e.ids = append([]uint32(nil), ids[head:]...)
		c.store(e)
	}
	if addSpecialTokens {
		ids = append(ids, c.tok.post.suffix...)
	}
	return ids
}

// maxCandidates bounds how many cached texts one lookup compares, newest
// first, so that many conversations sharing a system prompt stay cheap.
const maxCandidates = 32

// longestLocked finds the cached text and cut index that reuse the most of
// text, or nil.
func (c *PrefixCache) longestLocked(text string) (*cachedText, int) {
	var best *cachedText
	bestK, bestCut := -1, 0
	cands := c.byHead[text[:headLen]]
	for i := len(cands) - 1; i >= 0 && i >= len(cands)-maxCandidates; i-- {
		e := cands[i]
		common := commonPrefix(e.text, text)
		// The last cut whose margin lies inside the common prefix.
		k := sort.SearchInts(e.cuts, common-c.margin+1) - 1
		if k >= 0 && e.cuts[k] > bestCut {
			best, bestK, bestCut = e, k, e.cuts[k]
		}
		if common == len(e.text) && common < len(text) {
			break // text continues this one (the previous turn): no better match
		}
	}
	return best, bestK
}

func (c *PrefixCache) store(e *cachedText) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := e.text[:headLen]
	c.byHead[key] = append(c.byHead[key], e)
	e.elem = c.lru.PushFront(e)
	for c.lru.Len() > c.max {
		old := c.lru.Remove(c.lru.Back()).(*cachedText)
		k := old.text[:headLen]
		list := c.byHead[k][:0]
		for _, x := range c.byHead[k] {
			if x != old {
				list = append(list, x)
			}
		}
		if len(list) == 0 {
			delete(c.byHead, k)
		} else {
			c.byHead[k] = list
		}
	}
}

// commonPrefix returns the length of the longest common prefix of a and b,
// comparing 64-byte blocks at memory speed first.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+64 <= n && a[i:i+64] == b[i:i+64] {
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
