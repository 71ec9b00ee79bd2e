package index

import (
	"cmp"
	"slices"
	"sync/atomic"
)

// Pages: a key's holders beyond its inline page are an extSet, the holder
// words of its other pages. Sets are immutable and interned: every key
// with the same other pages points at one copy, and a change to a key's
// holders swaps its pointer to another set (copy on write). Keys of one
// cached chain are mostly held by the same holders, so a prompt cached on
// holders of many pages reads a few shared sets, which stay in the cache
// from one request to the next, where a run of words per key made each
// change of the holder set a walk over cold memory. A fleet of at most 64
// holders never has a set.
//
// A set of more than chunkMin words is also cut into chunks of chunkPages
// pages, each interned on its own, so two sets that differ in a few
// pages share the pointers of every other chunk: the paged walk steps
// from one key's set to the next key's comparing eight pointers and
// reading only the chunks that differ, so a change of the holder set
// costs the pages that changed, not every page of the set.

// maxPages is the number of 64-slot pages MaxHolders spans.
const maxPages = MaxHolders / 64

// word is one page's holder sets of one key.
type word struct {
	page     int
	gpu, cpu uint64
}

// extSet is one interned set of holder words: sorted by page, none empty.
// Readers reach it through extSets.reg by the number in a slot's meta;
// it never changes once published.
type extSet struct {
	fp    uint64 // XOR of fpWord over words
	words []word
	id    uint64
	refs  int // keys pointing at it; writer only
	// parts are the interned chunks of words (nil for an empty chunk),
	// set for sets of more than chunkMin words only: smaller ones are
	// cheaper to read whole than to compare chunk by chunk.
	parts *[chunks]*chunk
}

// Chunks: a set's words of pages [c*chunkPages, (c+1)*chunkPages).
const (
	chunkPages = 8
	chunks     = maxPages / chunkPages
	chunkMin   = 8
)

// chunk is one interned chunk of sets' words: sets whose words of the
// chunk's pages are equal point at one chunk (but for a fingerprint
// collision, when the later one stays unshared), so equal pointers mean
// equal words. Its words are a piece of the words of the set that first
// made it; immutable.
type chunk struct {
	fp    uint64
	words []word
	refs  int // sets pointing at it; writer only
}

// extSets are one Index's interned sets, shared by its shards.
type extSets struct {
	// reg holds the sets by number (0 is none). It grows by copying and
	// is swapped atomically; a number is reused once its set has no key.
	reg  atomic.Pointer[[]atomic.Pointer[extSet]]
	byFP map[uint64]*extSet // writer only, as below
	// parts interns the chunks of the sets that have them, by
	// fingerprint. Writer only.
	parts map[uint64]*chunk
	free  []uint64
	next  uint64
	buf   []word // scratch of the edits
}

// A set's fingerprint, its key in the intern map, is the XOR of fpWord
// over its words. Sets of equal fingerprints are compared word by word
// before one is shared.

// fpWord is one page's share of a set's fingerprint; 0 for an empty page.
func fpWord(page int, gpu, cpu uint64) uint64 {
	if gpu|cpu == 0 {
		return 0
	}
	h := mix64(uint64(page+1)*0x9E3779B97F4A7C15 ^ gpu)
	return mix64(h ^ cpu*0xC2B2AE3D27D4EB4F)
}

// mix64 is SplitMix64's finaliser.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	return x ^ x>>31
}

// get returns set number id, nil for none or for a number out of range (a
// torn read: the shard's counter makes the reader retry).
func (x *extSets) get(id uint64) *extSet {
	r := x.reg.Load()
	if r == nil || id >= uint64(len(*r)) {
		return nil
	}
	return (*r)[id].Load()
}

// intern returns the set of words ws (sorted, none empty), counting one
// more key on it; ws may be reused by the caller. from, when not nil, is
// a set whose words equal ws but in the chunk of page edited, so a new
// set takes its other chunks as they are. Writer only.
func (x *extSets) intern(ws []word, from *extSet, edited int) *extSet {
	var fp uint64
	for _, w := range ws {
		fp ^= fpWord(w.page, w.gpu, w.cpu)
	}
	if x.byFP == nil {
		x.byFP = map[uint64]*extSet{}
	}
	had := x.byFP[fp]
	if had != nil && slices.Equal(had.words, ws) {
		had.refs++
		return had
	}
	e := &extSet{fp: fp, words: slices.Clone(ws), refs: 1, id: x.number()}
	if had == nil { // on a collision the new set stays unshared
		x.byFP[fp] = e
	}
	if len(ws) > chunkMin {
		if from == nil || from.parts == nil {
			edited = -1
		}
		e.parts = x.cut(e.words, from, edited)
	}
	x.store(e)
	return e
}

// cut returns the interned chunks of ws (sorted by page), counting one
// more set on each: from's chunks where they are equal (every chunk but
// that of page edited, when edited >= 0), the others looked up or made.
// Writer only.
func (x *extSets) cut(ws []word, from *extSet, edited int) *[chunks]*chunk {
	if x.parts == nil {
		x.parts = map[uint64]*chunk{}
	}
	var parts [chunks]*chunk
	for i := 0; i < len(ws); {
		c := ws[i].page / chunkPages
		j, fp := i, uint64(0)
		if edited >= 0 && c != edited/chunkPages {
			for j < len(ws) && ws[j].page/chunkPages == c {
				j++
			}
			parts[c] = from.parts[c]
			parts[c].refs++
			i = j
			continue
		}
		for ; j < len(ws) && ws[j].page/chunkPages == c; j++ {
			fp ^= fpWord(ws[j].page, ws[j].gpu, ws[j].cpu)
		}
		had := x.parts[fp]
		switch {
		case had != nil && slices.Equal(had.words, ws[i:j]):
			had.refs++
			parts[c] = had
		default:
			parts[c] = &chunk{fp: fp, words: ws[i:j:j], refs: 1}
			if had == nil {
				x.parts[fp] = parts[c]
			}
		}
		i = j
	}
	return &parts
}

// release counts one key fewer on e and frees it when none is left.
// Writer only, after the key's meta no longer names e.
func (x *extSets) release(e *extSet) {
	if e.refs--; e.refs > 0 {
		return
	}
	if x.byFP[e.fp] == e {
		delete(x.byFP, e.fp)
	}
	if e.parts != nil {
		for _, c := range e.parts {
			if c == nil {
				continue
			}
			if c.refs--; c.refs == 0 && x.parts[c.fp] == c {
				delete(x.parts, c.fp)
			}
		}
	}
	(*x.reg.Load())[e.id].Store(nil)
	x.free = append(x.free, e.id)
}

func (x *extSets) number() uint64 {
	if n := len(x.free); n > 0 {
		id := x.free[n-1]
		x.free = x.free[:n-1]
		return id
	}
	x.next++
	return x.next
}

// store publishes e under its number, growing the registry if needed.
func (x *extSets) store(e *extSet) {
	r := x.reg.Load()
	if r == nil || e.id >= uint64(len(*r)) {
		size := 64
		if r != nil {
			size = 2 * len(*r)
		}
		for uint64(size) <= e.id {
			size *= 2
		}
		grown := make([]atomic.Pointer[extSet], size)
		if r != nil {
			for i := range *r {
				grown[i].Store((*r)[i].Load())
			}
		}
		x.reg.Store(&grown)
		r = &grown
	}
	(*r)[e.id].Store(e)
}

// meta layout: inline page (16 bits), the set's word count (8 bits, 0 for
// no set), the set's number.
func packMeta(page int, id uint64, n int) uint64 { return id<<24 | uint64(n)<<16 | uint64(page) }

// ext is slot s's set, nil for none.
func (t *hashTable) ext(s *slot) *extSet {
	m := s.meta.Load()
	if m>>16&0xff == 0 {
		return nil
	}
	return t.sets.get(m >> 24)
}

// setExt points s at the set of ws (none: no set). Writer only.
func (t *hashTable) setExt(s *slot, ws []word) { t.setExtFrom(s, ws, -1) }

// setExtFrom is setExt where ws equals s's set but in the chunk of page
// edited (any chunk when edited < 0). Writer only.
func (t *hashTable) setExtFrom(s *slot, ws []word, edited int) {
	old := t.ext(s)
	if len(ws) == 0 {
		s.meta.Store(packMeta(s.page(), 0, 0))
	} else {
		e := t.sets.intern(ws, old, edited)
		s.meta.Store(packMeta(s.page(), e.id, len(ws)))
	}
	if old != nil {
		t.sets.release(old)
	}
}

// editExt sets page p's tier word of s's set to its bits | set &^ clr,
// adding or dropping the page as needed. Writer only.
func (t *hashTable) editExt(s *slot, p int, tier Tier, set, clr uint64) {
	var ws []word
	if e := t.ext(s); e != nil {
		ws = append(t.sets.buf[:0], e.words...)
	}
	i, found := slices.BinarySearchFunc(ws, p, func(w word, p int) int { return cmp.Compare(w.page, p) })
	if !found {
		ws = slices.Insert(ws, i, word{page: p})
	}
	b := &ws[i].gpu
	if tier == CPU {
		b = &ws[i].cpu
	}
	*b = *b&^clr | set
	if ws[i].gpu|ws[i].cpu == 0 {
		ws = slices.Delete(ws, i, i+1)
	}
	t.setExtFrom(s, ws, p)
	t.sets.buf = ws[:0]
}

// extBits is tier's holder set of page p in s's set (0 when absent).
func (t *hashTable) extBits(s *slot, p int, tier Tier) uint64 {
	e := t.ext(s)
	if e == nil {
		return 0
	}
	for _, w := range e.words {
		if w.page == p {
			if tier == CPU {
				return w.cpu
			}
			return w.gpu
		}
	}
	return 0
}

// page0 is slot s's holder sets of page 0, for the one-page walk.
func (t *hashTable) page0(s *slot) entry {
	m := s.meta.Load()
	if m&0xffff == 0 {
		return s.load()
	}
	if m>>16&0xff != 0 {
		if e := t.sets.get(m >> 24); e != nil && len(e.words) > 0 && e.words[0].page == 0 {
			return entry{gpu: e.words[0].gpu, cpu: e.words[0].cpu}
		}
	}
	return entry{}
}

// keyID names a key's holder sets for the paged walk: keys with equal
// ids have equal holders (a set never changes once published, so one
// pointer names one content; the pointer keeps it from being reused while
// the walk holds it). Keys of one cached chain mostly have the same ids,
// so the walk reads a key's pages only when its id differs from the
// previous key's.
type keyID struct {
	set      *extSet
	page     int
	gpu, cpu uint64
}

// id reads slot s's id: its inline page's holder sets and its set, the
// zero id on a torn read (a set number already freed; the caller's
// retry reads it again).
func (t *hashTable) id(s *slot) keyID {
	m := s.meta.Load()
	id := keyID{page: int(m & 0xffff), gpu: s.gpu.Load(), cpu: s.cpu.Load()}
	if m>>16&0xff != 0 {
		if id.set = t.sets.get(m >> 24); id.set == nil {
			return keyID{}
		}
	}
	return id
}

// hasBit reports whether slot hs holds key slot s on tier. Writer only.
func (t *hashTable) hasBit(s *slot, hs int, tier Tier) bool {
	p, bit := hs>>6, uint64(1)<<(hs&63)
	if s.page() == p {
		return s.tier(tier).Load()&bit != 0
	}
	return t.extBits(s, p, tier)&bit != 0
}

// setBit adds slot hs (page p, bit b) to tier of key slot s and reports
// whether it was newly set. s may be just inserted (empty). Writer only,
// inside begin/end.
func (t *hashTable) setBit(s *slot, hs int, tier Tier) bool {
	p, bit := hs>>6, uint64(1)<<(hs&63)
	if s.empty() && s.meta.Load() == 0 {
		s.meta.Store(packMeta(p, 0, 0))
		s.tier(tier).Store(bit)
		return true
	}
	if t.hasBit(s, hs, tier) {
		return false
	}
	if s.page() == p {
		s.tier(tier).Or(bit)
	} else {
		t.editExt(s, p, tier, bit, 0)
	}
	return true
}

// clearOne removes slot hs from tier of key slot s and reports whether it
// was set, leaving s to normalise. Writer only, inside begin/end.
func (t *hashTable) clearOne(s *slot, hs int, tier Tier) bool {
	if !t.hasBit(s, hs, tier) {
		return false
	}
	p, bit := hs>>6, uint64(1)<<(hs&63)
	if s.page() == p {
		s.tier(tier).And(^bit)
	} else {
		t.editExt(s, p, tier, 0, bit)
	}
	return true
}

// clearBit removes slot hs from tier of key slot s and reports whether it
// was set and whether the key has no holder left (the caller removes it).
// Writer only, inside begin/end.
func (t *hashTable) clearBit(s *slot, hs int, tier Tier) (was, empty bool) {
	if !t.clearOne(s, hs, tier) {
		return false, false
	}
	return true, t.normalise(s)
}

// clearDead removes the slots of dead from key slot s and reports whether
// the key has no holder left. Writer only, inside begin/end.
func (t *hashTable) clearDead(s *slot, dead *slotSet) bool {
	changed := false
	if m := dead[s.page()%maxPages]; (s.gpu.Load()|s.cpu.Load())&m != 0 {
		s.gpu.Store(s.gpu.Load() &^ m)
		s.cpu.Store(s.cpu.Load() &^ m)
		changed = true
	}
	if e := t.ext(s); e != nil && slices.ContainsFunc(e.words, func(w word) bool { return (w.gpu|w.cpu)&dead[w.page] != 0 }) {
		ws := t.sets.buf[:0]
		for _, w := range e.words {
			w.gpu &^= dead[w.page]
			w.cpu &^= dead[w.page]
			if w.gpu|w.cpu != 0 {
				ws = append(ws, w)
			}
		}
		t.setExt(s, ws)
		t.sets.buf = ws[:0]
		changed = true
	}
	return changed && t.normalise(s)
}

// normalise moves s's first other page inline when the inline one is
// empty, and reports whether s has no holder left. Writer only, inside
// begin/end.
func (t *hashTable) normalise(s *slot) bool {
	if !s.empty() {
		return false
	}
	e := t.ext(s)
	if e == nil {
		return true
	}
	w := e.words[0]
	rest := append(t.sets.buf[:0], e.words[1:]...)
	s.gpu.Store(w.gpu)
	s.cpu.Store(w.cpu)
	m := s.meta.Load()
	s.meta.Store(m&^0xffff | uint64(w.page)) // still names e, for setExt to release
	t.setExt(s, rest)
	t.sets.buf = rest[:0]
	return false
}
