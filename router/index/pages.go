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

// extSet is the holder sets of a key's other pages. Its pages are fixed
// when it is made (a page that comes or goes replaces the set); their bits
// change in place, atomically, inside the shard's write bracket.
type extSet struct {
	pages []int
	gpu   []atomic.Uint64
	cpu   []atomic.Uint64
}

func newExtSet(ws []word) *extSet {
	e := &extSet{pages: make([]int, len(ws)), gpu: make([]atomic.Uint64, len(ws)), cpu: make([]atomic.Uint64, len(ws))}
	for i, w := range ws {
		e.pages[i] = w.page
		e.gpu[i].Store(w.gpu)
		e.cpu[i].Store(w.cpu)
	}
	return e
}

// find returns the position of page p, -1 when absent.
func (e *extSet) find(p int) int {
	for i, q := range e.pages {
		if q == p {
			return i
		}
	}
	return -1
}

// extTable numbers a shard's extSets; a slot's meta names its set by
// number, so the slot stays four words and moves (resize, backward shift)
// without touching its set. Number 0 is never used.
type extTable struct {
	sets atomic.Pointer[[]atomic.Pointer[extSet]]
	free []int // writer only
}

// get returns set id, nil when the id is out of range (a torn read: the
// shard's counter makes the reader retry).
func (x *extTable) get(id int) *extSet {
	sp := x.sets.Load()
	if sp == nil || id <= 0 || id >= len(*sp) {
		return nil
	}
	return (*sp)[id].Load()
}

// put stores e under a fresh id and returns it. Writer only.
func (x *extTable) put(e *extSet) int {
	if n := len(x.free); n > 0 {
		id := x.free[n-1]
		x.free = x.free[:n-1]
		(*x.sets.Load())[id].Store(e)
		return id
	}
	old := x.sets.Load()
	n := 1
	if old != nil {
		n = len(*old)
	}
	grown := make([]atomic.Pointer[extSet], max(2*n, 4))
	if old != nil {
		for i := range *old {
			grown[i].Store((*old)[i].Load())
		}
	}
	for i := len(grown) - 1; i > n; i-- {
		x.free = append(x.free, i)
	}
	grown[n].Store(e)
	x.sets.Store(&grown)
	return n
}

// release frees id. Writer only.
func (x *extTable) release(id int) {
	(*x.sets.Load())[id].Store(nil)
	x.free = append(x.free, id)
}

// page0 is slot s's holder sets of page 0, for the one-page walk.
func (t *hashTable) page0(s *slot) entry {
	m := s.meta.Load()
	if m&0xffff == 0 {
		return s.load()
	}
	if e := t.exts.get(int(m >> 16)); e != nil {
		if i := e.find(0); i >= 0 {
			return entry{gpu: e.gpu[i].Load(), cpu: e.cpu[i].Load()}
		}
	}
	return entry{}
}

// words appends slot s's holder sets of every page to buf (at most
// maxPages words: a torn read is cut short, and retried by the caller).
func (t *hashTable) words(s *slot, buf []word) []word {
	m := s.meta.Load()
	buf = append(buf, word{page: int(m & 0xffff), gpu: s.gpu.Load(), cpu: s.cpu.Load()})
	if m>>16 == 0 {
		return buf
	}
	if e := t.exts.get(int(m >> 16)); e != nil {
		for i := range e.pages[:min(len(e.pages), cap(buf)-len(buf))] {
			buf = append(buf, word{page: e.pages[i], gpu: e.gpu[i].Load(), cpu: e.cpu[i].Load()})
		}
	}
	return buf
}

// tierWord returns the holder set of tier t and page p of slot s, and
// whether the key has page p at all. Writer only.
func (t *hashTable) tierWord(s *slot, p int, tier Tier) (*atomic.Uint64, bool) {
	if s.page() == p {
		return s.tier(tier), true
	}
	if id := s.extID(); id != 0 {
		e := t.exts.get(id)
		if i := e.find(p); i >= 0 {
			if tier == CPU {
				return &e.cpu[i], true
			}
			return &e.gpu[i], true
		}
	}
	return nil, false
}

// setBit adds slot hs (page p, bit b) to tier of key slot s and reports
// whether it was newly set. s may be just inserted (empty). Writer only,
// inside begin/end.
func (t *hashTable) setBit(s *slot, hs int, tier Tier) bool {
	p, bit := hs>>6, uint64(1)<<(hs&63)
	if s.empty() && s.extID() == 0 {
		s.setMeta(p, 0)
		s.tier(tier).Store(bit)
		return true
	}
	if w, ok := t.tierWord(s, p, tier); ok {
		if w.Load()&bit != 0 {
			return false
		}
		w.Or(bit)
		return true
	}
	// A new page for this key: replace its extSet with one that has it.
	var ws []word
	if id := s.extID(); id != 0 {
		e := t.exts.get(id)
		for i, q := range e.pages {
			ws = append(ws, word{page: q, gpu: e.gpu[i].Load(), cpu: e.cpu[i].Load()})
		}
		t.exts.release(id)
	}
	nw := word{page: p}
	if tier == CPU {
		nw.cpu = bit
	} else {
		nw.gpu = bit
	}
	ws = append(ws, nw)
	s.setMeta(s.page(), t.exts.put(newExtSet(ws)))
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
	return true, t.normalise(s)
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
	if id := s.extID(); id != 0 {
		e := t.exts.get(id)
		for i, q := range e.pages {
			if m := dead[q]; (e.gpu[i].Load()|e.cpu[i].Load())&m != 0 {
				e.gpu[i].Store(e.gpu[i].Load() &^ m)
				e.cpu[i].Store(e.cpu[i].Load() &^ m)
				changed = true
			}
		}
	}
	return changed && t.normalise(s)
}

// normalise drops s's empty pages, moving another page inline when the
// inline one is empty, and reports whether s has no holder left. Writer
// only, inside begin/end.
func (t *hashTable) normalise(s *slot) bool {
	id := s.extID()
	if id == 0 {
		return s.empty()
	}
	e := t.exts.get(id)
	var ws []word
	for i, q := range e.pages {
		if g, c := e.gpu[i].Load(), e.cpu[i].Load(); g|c != 0 {
			ws = append(ws, word{page: q, gpu: g, cpu: c})
		}
	}
	if len(ws) == len(e.pages) && !s.empty() {
		return false
	}
	t.exts.release(id)
	if s.empty() && len(ws) > 0 {
		w := ws[0]
		ws = ws[1:]
		s.gpu.Store(w.gpu)
		s.cpu.Store(w.cpu)
		s.setMeta(w.page, 0)
	}
	if len(ws) > 0 {
		s.setMeta(s.page(), t.exts.put(newExtSet(ws)))
	} else {
		s.setMeta(s.page(), 0)
	}
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
		if changed && t.normalise(s) {
			empty = append(empty, key)
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
