package index

import "sync/atomic"

// Pages: a key's holders beyond its inline page live in an extSet, one
// word pair per page that holds it. A fleet of at most 64 holders never has
// one; a key shared by holders of several pages (a common system prompt
// across thousands of ranks) has one, read right after the slot.

// maxPages is the number of 64-slot pages MaxHolders spans.
const maxPages = MaxHolders / 64

// word is one page's holder sets of one key.
type word struct {
	page     int
	gpu, cpu uint64
}

// extWord is one page's holder sets of one key, in a shard's arena.
type extWord struct {
	page, gpu, cpu atomic.Uint64
}

// extArena holds the extra pages of a shard's keys, each key's pages one
// contiguous run: a slot's meta names its run (offset and length), so a
// Lookup reaches a key's other pages with one more load, and the slot
// stays four words and moves (resize, backward shift) without touching
// its run. Freed runs are reused by length; the arena does not shrink.
type extArena struct {
	buf atomic.Pointer[[]extWord]
	end int // words in use or freed; writer only
	// free holds run offsets by length-1 (writer only; a run is at most a
	// header and 63 pages), allocated with the first run: the shard, read
	// on every probe, stays a few words.
	free *[maxPages][]int
}

// A run starts with a header word whose gpu field is the key's
// fingerprint: the XOR of fpWord over all its pages, inline one included.
// Keys of one cached chain are mostly held by the same holders, so the
// paged walk compares a key's fingerprint with the previous key's and
// reads its pages only when they differ. Equal fingerprints of unequal
// sets need a 64-bit collision of a strong mix (about 2^-64 per key).

// fpWord is one page's share of a key's fingerprint; 0 for an empty page.
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

// refp recomputes s's fingerprint after a change. Writer only.
func (t *hashTable) refp(s *slot) {
	off, n := s.extRun()
	r := t.exts.run(off, n)
	if r == nil {
		return
	}
	fp := fpWord(s.page(), s.gpu.Load(), s.cpu.Load())
	for i := range r[1:] {
		x := &r[1+i]
		fp ^= fpWord(int(x.page.Load()), x.gpu.Load(), x.cpu.Load())
	}
	r[0].gpu.Store(fp)
}

// meta layout: inline page (16 bits), run length (8 bits), run offset.
func packMeta(page, off, n int) uint64 { return uint64(off)<<24 | uint64(n)<<16 | uint64(page) }

func (s *slot) extRun() (off, n int) {
	m := s.meta.Load()
	return int(m >> 24), int(m >> 16 & 0xff)
}

// run returns the words of run (off, n), nil when out of range (a torn
// read: the shard's counter makes the reader retry).
func (x *extArena) run(off, n int) []extWord {
	b := x.buf.Load()
	if n == 0 || b == nil || off < 0 || off+n > len(*b) || n > maxPages+1 {
		return nil
	}
	return (*b)[off : off+n]
}

// put stores ws in a fresh run and returns its offset. Writer only.
func (x *extArena) put(ws []word) int {
	n := len(ws)
	var off int
	if x.free == nil {
		x.free = new([maxPages][]int)
	}
	if f := x.free[n-1]; len(f) > 0 {
		off = f[len(f)-1]
		x.free[n-1] = f[:len(f)-1]
	} else {
		b := x.buf.Load()
		if b == nil || x.end+n > len(*b) {
			size := 64
			if b != nil {
				size = 2 * len(*b)
			}
			for size < x.end+n {
				size *= 2
			}
			grown := make([]extWord, size)
			if b != nil {
				for i := range (*b)[:x.end] {
					o := &(*b)[i]
					grown[i].page.Store(o.page.Load())
					grown[i].gpu.Store(o.gpu.Load())
					grown[i].cpu.Store(o.cpu.Load())
				}
			}
			x.buf.Store(&grown)
		}
		off = x.end
		x.end += n
	}
	r := (*x.buf.Load())[off : off+n]
	for i, w := range ws {
		r[i].page.Store(uint64(w.page))
		r[i].gpu.Store(w.gpu)
		r[i].cpu.Store(w.cpu)
	}
	return off
}

// release frees run (off, n). Writer only.
func (x *extArena) release(off, n int) {
	for i := range x.run(off, n) {
		r := &(*x.buf.Load())[off+i]
		r.gpu.Store(0)
		r.cpu.Store(0)
	}
	x.free[n-1] = append(x.free[n-1], off)
}

// extWords returns slot s's extra words, after the run's header (writer
// or, with retries, reader).
func (t *hashTable) extWords(s *slot) []extWord {
	off, n := s.extRun()
	if r := t.exts.run(off, n); r != nil {
		return r[1:]
	}
	return nil
}

func findPage(ws []extWord, p int) int {
	for i := range ws {
		if int(ws[i].page.Load()) == p {
			return i
		}
	}
	return -1
}

// setExt replaces s's extra words with ws (none: no run).
func (t *hashTable) setExt(s *slot, ws []word) {
	if off, n := s.extRun(); n > 0 {
		t.exts.release(off, n)
	}
	if len(ws) == 0 {
		s.meta.Store(packMeta(s.page(), 0, 0))
		return
	}
	run := append(make([]word, 1, len(ws)+1), ws...)
	s.meta.Store(packMeta(s.page(), t.exts.put(run), len(run)))
	t.refp(s)
}

// page0 is slot s's holder sets of page 0, for the one-page walk.
func (t *hashTable) page0(s *slot) entry {
	m := s.meta.Load()
	if m&0xffff == 0 {
		return s.load()
	}
	ws := t.exts.run(int(m>>24), int(m>>16&0xff))
	if len(ws) > 0 {
		ws = ws[1:]
	}
	if i := findPage(ws, 0); i >= 0 {
		return entry{gpu: ws[i].gpu.Load(), cpu: ws[i].cpu.Load()}
	}
	return entry{}
}

// words appends slot s's holder sets of every page to buf (at most
// maxPages words: a torn read is cut short, and retried by the caller) and
// returns the key's fingerprint; when it equals prev, it appends nothing
// for a key with several pages (the caller knows them already).
func (t *hashTable) words(s *slot, buf []word, prev uint64) ([]word, uint64) {
	m := s.meta.Load()
	page, gpu, cpu := int(m&0xffff), s.gpu.Load(), s.cpu.Load()
	if m>>16 == 0 {
		return append(buf, word{page: page, gpu: gpu, cpu: cpu}), fpWord(page, gpu, cpu)
	}
	ws := t.exts.run(int(m>>24), int(m>>16&0xff))
	if len(ws) == 0 {
		return buf, 0
	}
	fp := ws[0].gpu.Load()
	if fp == prev {
		return buf, fp
	}
	buf = append(buf, word{page: page, gpu: gpu, cpu: cpu})
	ws = ws[1:]
	for i := range ws[:min(len(ws), cap(buf)-len(buf))] {
		x := &ws[i]
		buf = append(buf, word{page: int(x.page.Load()), gpu: x.gpu.Load(), cpu: x.cpu.Load()})
	}
	return buf, fp
}

// tierWord returns the holder set of tier t and page p of slot s, and
// whether the key has page p at all. Writer only.
func (t *hashTable) tierWord(s *slot, p int, tier Tier) (*atomic.Uint64, bool) {
	if s.page() == p {
		return s.tier(tier), true
	}
	ws := t.extWords(s)
	if i := findPage(ws, p); i >= 0 {
		if tier == CPU {
			return &ws[i].cpu, true
		}
		return &ws[i].gpu, true
	}
	return nil, false
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
	if w, ok := t.tierWord(s, p, tier); ok {
		if w.Load()&bit != 0 {
			return false
		}
		w.Or(bit)
		t.refp(s)
		return true
	}
	// A new page for this key: replace its extSet with one that has it.
	var ws []word
	ext := t.extWords(s)
	for i := range ext {
		ws = append(ws, word{page: int(ext[i].page.Load()), gpu: ext[i].gpu.Load(), cpu: ext[i].cpu.Load()})
	}
	nw := word{page: p}
	if tier == CPU {
		nw.cpu = bit
	} else {
		nw.gpu = bit
	}
	t.setExt(s, append(ws, nw))
	return true
}

// clearBit removes slot hs from tier of key slot s and reports whether it
// was set and whether the key has no holder left (the caller removes it).
// Writer only, inside begin/end.
func (t *hashTable) clearBit(s *slot, hs int, tier Tier) (was, empty bool) {
	p, bit := hs>>6, uint64(1)<<(hs&63)
	w, ok := t.tierWord(s, p, tier)
	if !ok || w.Load()&bit == 0 {
		return false, false
	}
	w.And(^bit)
	empty = t.normalise(s)
	t.refp(s)
	return true, empty
}

// clearDead removes the slots of dead from key slot s and reports whether
// the key has no holder left. Writer only, inside begin/end.
func (t *hashTable) clearDead(s *slot, dead *slotSet) bool {
	p := s.page()
	changed := false
	if m := dead[p]; (s.gpu.Load()|s.cpu.Load())&m != 0 {
		s.gpu.Store(s.gpu.Load() &^ m)
		s.cpu.Store(s.cpu.Load() &^ m)
		changed = true
	}
	{
		ws := t.extWords(s)
		for i := range ws {
			x := &ws[i]
			if m := dead[x.page.Load()%maxPages]; (x.gpu.Load()|x.cpu.Load())&m != 0 {
				x.gpu.Store(x.gpu.Load() &^ m)
				x.cpu.Store(x.cpu.Load() &^ m)
				changed = true
			}
		}
	}
	if !changed {
		return false
	}
	empty := t.normalise(s)
	t.refp(s)
	return empty
}

// normalise drops s's empty pages, moving another page inline when the
// inline one is empty, and reports whether s has no holder left. Writer
// only, inside begin/end.
func (t *hashTable) normalise(s *slot) bool {
	ext := t.extWords(s)
	if len(ext) == 0 {
		return s.empty()
	}
	var ws []word
	for i := range ext {
		if g, c := ext[i].gpu.Load(), ext[i].cpu.Load(); g|c != 0 {
			ws = append(ws, word{page: int(ext[i].page.Load()), gpu: g, cpu: c})
		}
	}
	if len(ws) == len(ext) && !s.empty() {
		return false
	}
	if s.empty() && len(ws) > 0 {
		w := ws[0]
		ws = ws[1:]
		s.gpu.Store(w.gpu)
		s.cpu.Store(w.cpu)
		off, n := s.extRun()
		s.meta.Store(packMeta(w.page, off, n))
	}
	t.setExt(s, ws)
	return s.empty()
}

// keepOnly clears, for each slot of keep, the bits of keys (per tier) keep
// does not list for it, calling gone for each; it removes the keys it
// empties and returns how many. Writer only, inside begin/end.
func (t *hashTable) keepOnly(keep map[int]map[uint64][2]bool, gone func(s int, t Tier)) int {
	var empty []uint64
	visit := func(s *slot, key uint64) {
		changed := false
		for hs, m := range keep {
			for _, tier := range [2]Tier{GPU, CPU} {
				w, ok := t.tierWord(s, hs>>6, tier)
				bit := uint64(1) << (hs & 63)
				if !ok || w.Load()&bit == 0 || m[key][tier] {
					continue
				}
				w.And(^bit)
				gone(hs, tier)
				changed = true
			}
		}
		if changed {
			if t.normalise(s) {
				empty = append(empty, key)
			}
			t.refp(s)
		}
	}
	if t.hasZero.Load() {
		visit(&t.zero, 0)
	}
	a := t.arr.Load()
	for i := range a.s {
		if key := a.s[i].key.Load(); key != 0 {
			visit(&a.s[i], key)
		}
	}
	for _, k := range empty {
		t.remove(k)
	}
	return len(empty)
}
