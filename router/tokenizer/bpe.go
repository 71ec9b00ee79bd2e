package tokenizer

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// bpe is a BPE model as tokenizer.json describes it. Words are merged with
// the same priority queue as the Rust crate: lowest merge rank first, ties
// broken by the leftmost position, stale queue entries skipped.
type bpe struct {
	vocab  map[string]uint32 // token -> id, in the file's own alphabet
	merges map[uint64]merge  // pair(left id, right id) -> merge

	// byteLevel: words are raw bytes; byteIDs maps each byte to the id of
	// its ByteLevel character, and rawVocab is vocab keyed by raw bytes.
	byteLevel bool
	byteIDs   [256]uint32
	byteOK    [256]bool
	rawVocab  map[string]uint32

	unk          *uint32
	fuseUnk      bool
	byteFallback bool
	fallbackIDs  [256]uint32
	fallbackHas  [256]bool // the <0xXX> token exists
	ignoreMerges bool

	cache wordCache
}

type merge struct {
	rank  uint32
	newID uint32
}

func pairKey(a, b uint32) uint64 { return uint64(a)<<32 | uint64(b) }

func newBPE(m modelJSON, byteLevel bool) (*bpe, error) {
	if m.Type != "BPE" && m.Type != "" {
		return nil, fmt.Errorf("model type %q: only BPE is supported", m.Type)
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return nil, fmt.Errorf("model: BPE dropout %v makes encoding random; not supported", *m.Dropout)
	}
	if p := m.ContinuingSubwordPrefix; p != nil && *p != "" {
		return nil, fmt.Errorf("model: continuing_subword_prefix %q not supported", *p)
	}
	if s := m.EndOfWordSuffix; s != nil && *s != "" {
		return nil, fmt.Errorf("model: end_of_word_suffix %q not supported", *s)
	}
	if len(m.Vocab) == 0 {
		return nil, fmt.Errorf("model: empty vocab")
	}
	b := &bpe{
		vocab:        m.Vocab,
		byteLevel:    byteLevel,
		fuseUnk:      m.FuseUnk,
		byteFallback: m.ByteFallback,
		ignoreMerges: m.IgnoreMerges,
	}
	b.cache.init()
	merges, err := decodeMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	b.merges = make(map[uint64]merge, len(merges))
	for rank, mg := range merges {
		a, ok := b.vocab[mg[0]]
		if !ok {
			return nil, fmt.Errorf("merge %d: token %q not in vocab", rank, mg[0])
		}
		c, ok := b.vocab[mg[1]]
		if !ok {
			return nil, fmt.Errorf("merge %d: token %q not in vocab", rank, mg[1])
		}
		n, ok := b.vocab[mg[0]+mg[1]]
		if !ok {
			return nil, fmt.Errorf("merge %d: merged token %q not in vocab", rank, mg[0]+mg[1])
		}
		b.merges[pairKey(a, c)] = merge{rank: uint32(rank), newID: n}
	}
	if m.UnkToken != nil {
		id, ok := b.vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model: unk_token %q not in vocab", *m.UnkToken)
		}
		b.unk = &id
	}
	if b.byteFallback {
		for i := 0; i < 256; i++ {
			b.fallbackIDs[i], b.fallbackHas[i] = b.vocab[fmt.Sprintf("<0x%02X>", i)]
		}
	}
	if byteLevel {
		for i := 0; i < 256; i++ {
			id, ok := b.vocab[string(byteToRune[i])]
			b.byteIDs[i], b.byteOK[i] = id, ok
		}
		b.rawVocab = make(map[string]uint32, len(b.vocab))
		for tok, id := range b.vocab {
			if raw, ok := byteLevelDecode(tok); ok {
				b.rawVocab[raw] = id
			}
		}
	}
	return b, nil
}

// encodeWord appends the ids of one pre-tokenized word. For byte-level
// models the word is raw bytes; otherwise it is normalized text.
func (b *bpe) encodeWord(dst []uint32, word string) []uint32 {
	if word == "" {
		return dst
	}
	if b.ignoreMerges {
		v := b.vocab
		if b.byteLevel {
			v = b.rawVocab
		}
		if id, ok := v[word]; ok {
			return append(dst, id)
		}
	}
	if ids, ok := b.cache.get(word); ok {
		return append(dst, ids...)
	}
	syms := b.initialSymbols(word)
	syms = mergeAll(syms, b.merges)
	start := len(dst)
	for _, s := range syms {
		if s.len > 0 {
			dst = append(dst, s.id)
		}
	}
	b.cache.put(word, dst[start:])
	return dst
}

// symbol is one node of the doubly linked list a word is merged in.
type symbol struct {
	id         uint32
	prev, next int32
	len        int32 // 0 once merged into its left neighbour
}

func (b *bpe) initialSymbols(word string) []symbol {
	syms := make([]symbol, 0, len(word))
	add := func(id uint32) {
		n := int32(len(syms))
		syms = append(syms, symbol{id: id, prev: n - 1, next: n + 1, len: 1})
	}
	if b.byteLevel {
		for i := 0; i < len(word); i++ {
			if b.byteOK[word[i]] {
				add(b.byteIDs[word[i]])
			}
		}
	} else {
		// As the Rust crate: unknown characters become byte tokens when
		// byte_fallback has them all, otherwise <unk> (fused when
		// fuse_unk). A pending <unk> is flushed only by a known character.
		pendingUnk := false
		for i, r := range word {
			n := utf8.RuneLen(r)
			if r == utf8.RuneError {
				_, n = utf8.DecodeRuneInString(word[i:])
			}
			ch := word[i : i+n]
			if id, ok := b.vocab[ch]; ok {
				if pendingUnk {
					add(*b.unk)
					pendingUnk = false
				}
				add(id)
				continue
			}
			if b.byteFallback && b.hasFallback(ch) {
				for j := 0; j < len(ch); j++ {
					add(b.fallbackIDs[ch[j]])
				}
				continue
			}
			if b.unk != nil {
				if pendingUnk && !b.fuseUnk {
					add(*b.unk)
				}
				pendingUnk = true
			}
		}
		if pendingUnk {
			add(*b.unk)
		}
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	return syms
}

func (b *bpe) hasFallback(ch string) bool {
	for j := 0; j < len(ch); j++ {
		if !b.fallbackHas[ch[j]] {
			return false
		}
	}
	return true
}

// mergeAll applies merges in rank order, leftmost first on ties.
func mergeAll(syms []symbol, merges map[uint64]merge) []symbol {
	if len(syms) < 2 {
		return syms
	}
	q := make(mergeQueue, 0, len(syms))
	for i := 0; i+1 < len(syms); i++ {
		if m, ok := merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			q = append(q, queued{pos: int32(i), rank: m.rank, newID: m.newID, left: syms[i].id, right: syms[i+1].id})
		}
	}
	q.init()
	for len(q) > 0 {
		top := q.pop()
		cur := &syms[top.pos]
		if cur.len == 0 || cur.next < 0 {
			continue
		}
		right := syms[cur.next]
		// A queued pair is stale once either side has merged; symbols only
		// grow, so unchanged ids mean the pair (and its merge) still holds.
		if cur.id != top.left || right.id != top.right {
			continue
		}
		cur.id = top.newID
		cur.len += right.len
		syms[cur.next].len = 0
		cur.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if m, ok := merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				q.push(queued{pos: cur.prev, rank: m.rank, newID: m.newID, left: syms[cur.prev].id, right: cur.id})
			}
		}
		if cur.next >= 0 {
			if m, ok := merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				q.push(queued{pos: top.pos, rank: m.rank, newID: m.newID, left: cur.id, right: syms[cur.next].id})
			}
		}
	}
	return syms
}

type queued struct {
	pos         int32
	rank        uint32
	newID       uint32
	left, right uint32 // the pair's ids when queued
}

// mergeQueue is a binary min-heap on (rank, pos), written out rather than
// through container/heap to avoid boxing every entry.
type mergeQueue []queued

func (q mergeQueue) less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].pos < q[j].pos
}

func (q mergeQueue) init() {
	for i := len(q)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

func (q *mergeQueue) push(x queued) {
	*q = append(*q, x)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *mergeQueue) pop() queued {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	*q = h[:n]
	q.down(0)
	return top
}

func (q mergeQueue) down(i int) {
	n := len(q)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			return
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
}

// wordCache remembers the ids of short words. Like the Rust crate's cache it
// stops growing when full rather than evicting.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]uint32
}

const (
	wordCacheEntries = 100_000
	wordCacheMaxLen  = 256
)

func (c *wordCache) init() { c.m = make(map[string][]uint32) }

func (c *wordCache) get(w string) ([]uint32, bool) {
	if len(w) > wordCacheMaxLen {
		return nil, false
	}
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []uint32) {
	if len(w) > wordCacheMaxLen {
		return
	}
	c.mu.Lock()
	if len(c.m) < wordCacheEntries {
		c.m[w] = append([]uint32(nil), ids...)
	}
	c.mu.Unlock()
}
