package index

import (
	"hash/maphash"
	"maps"
	"math/bits"
	"runtime"
	"sync/atomic"
)

// Holder slots: each (replica, rank) owns one slot, a bit position in one
// 64-slot page of every key's holder sets. Readers learn which slots are
// alive, and whose they are, from an immutable table the writer replaces
// atomically.

// holder names the owner of a slot.
type holder struct {
	replica string
	rank    int
}

// table is the immutable slot table readers see: which slots are alive and
// whom they belong to. readers counts Lookups using it, so a slot is reused
// only when no reader can still see its old owner's bits as live.
type table struct {
	// live has one word per page up to the highest live slot's page: a
	// fleet of at most 64 holders has exactly one page, and its Lookups
	// take the one-word walk.
	live    []uint64
	holders holderPages // len(live) pages
	// group[s] is the lowest live slot of the same replica as slot s, so
	// Lookup merges a replica's ranks without comparing names; byName maps
	// each live replica to its group.
	group   []int32
	byName  names
	count   int // live slots
	readers atomic.Int64
}

// onePage reports whether every live slot is in page 0.
func (t *table) onePage() bool { return len(t.live) <= 1 }

// holderPages names the holder of each slot, a page of 64 at a time, so
// that a new table shares every page it does not change with the old one.
type holderPages []*[64]holder

func (hp holderPages) at(s int) holder {
	if pg := hp[s>>6]; pg != nil {
		return pg[s&63]
	}
	return holder{}
}

// usedPages is the number of pages up to the highest slot allocated.
func (ix *Index) usedPages() int {
	for p := maxPages - 1; p > 0; p-- {
		if ix.used[p] != 0 {
			return p + 1
		}
	}
	return 1
}

// nameParts is how many parts names splits the replica names into.
const nameParts = 64

// names maps each live replica's name to its group. It is split by a hash
// of the name into immutable parts, so that a publish copies only the
// parts whose replicas changed: one copy of the whole map per replica
// joining made a fleet's snapshot cost O(replicas²).
type names [nameParts]map[string]int32

var nameSeed = maphash.MakeSeed()

func namePart(name string) int { return int(maphash.String(nameSeed, name) % nameParts) }

func (n *names) get(name string) (int32, bool) {
	g, ok := n[namePart(name)][name]
	return g, ok
}

// set makes name's group g (g < 0: no group), copying its part first
// unless cloned says this publish did already.
func (n *names) set(name string, g int32, cloned *[nameParts]bool) {
	p := namePart(name)
	if !cloned[p] {
		n[p] = maps.Clone(n[p])
		if n[p] == nil {
			n[p] = map[string]int32{}
		}
		cloned[p] = true
	}
	if g < 0 {
		delete(n[p], name)
	} else {
		n[p][name] = g
	}
}

// slotMap maps each live holder to its slot, by replica then rank, so
// that finding a replica's slots costs its ranks, not the fleet's.
type slotMap map[string]map[int]int

func (m slotMap) get(h holder) (int, bool) {
	s, ok := m[h.replica][h.rank]
	return s, ok
}

func (m slotMap) set(h holder, s int) {
	ranks := m[h.replica]
	if ranks == nil {
		ranks = map[int]int{}
		m[h.replica] = ranks
	}
	ranks[h.rank] = s
}

func (m slotMap) del(h holder) {
	delete(m[h.replica], h.rank)
	if len(m[h.replica]) == 0 {
		delete(m, h.replica)
	}
}

// slotSet is a set of slots, one word per page.
type slotSet [maxPages]uint64

func (m *slotSet) add(s int)      { m[s>>6] |= 1 << (s & 63) }
func (m *slotSet) has(s int) bool { return m[s>>6]&(1<<(s&63)) != 0 }
func (m *slotSet) empty() bool    { return *m == slotSet{} }
func (m *slotSet) or(o *slotSet) {
	for i := range m {
		m[i] |= o[i]
	}
}
func (m *slotSet) andNot(o *slotSet) {
	for i := range m {
		m[i] &^= o[i]
	}
}
func (m *slotSet) count() (n int) {
	for _, w := range m {
		n += bits.OnesCount64(w)
	}
	return n
}

// alloc reserves the lowest free slot (not yet live), so that a fleet of
// at most 64 holders keeps to page 0.
func (ix *Index) alloc() (int, error) {
	if ix.free() == 0 && !ix.dead.empty() {
		ix.sweepDead()
	}
	for p, w := range ix.used {
		if w != ^uint64(0) {
			s := p<<6 | bits.TrailingZeros64(^w)
			ix.used[p] |= 1 << (s & 63)
			ix.counts[s] = [2]int{}
			if ix.cands != nil {
				ix.cands[s] = ix.cands[s][:0] // swept: it holds nothing
			}
			return s, nil
		}
	}
	return 0, ErrFull
}

// retire unmaps replica's live slots and returns them; the caller
// publishes and sweeps.
func (ix *Index) retire(replica string) (dead slotSet, any bool) {
	for _, s := range ix.slots[replica] {
		dead.add(s)
		any = true
	}
	delete(ix.slots, replica)
	return dead, any
}

// publish installs a modified copy of the slot table: edit sets and clears
// slots in the live set and names their holders; ix.slots must already be
// the new state. Only the pages of holders that edit names are copied, and
// only the replicas whose slots came or went get their groups recomputed
// (from ix.slots), so a fleet of thousands of holders joining one by one
// costs O(ranks) per join, not a copy of every holder and name.
func (ix *Index) publish(edit func(live *slotSet, name func(s int, h holder))) {
	old := ix.tab.Load()
	var live, was slotSet
	copy(was[:], old.live)
	live = was
	hp := make(holderPages, ix.usedPages())
	copy(hp, old.holders)
	var copied [maxPages]bool
	edit(&live, func(s int, h holder) {
		if p := s >> 6; !copied[p] {
			pg := new([64]holder)
			if hp[p] != nil {
				*pg = *hp[p]
			}
			hp[p], copied[p] = pg, true
		}
		hp[s>>6][s&63] = h
	})
	pages := 1
	for p, w := range live {
		if w != 0 {
			pages = p + 1
		}
	}
	n := pages * 64
	t := &table{live: append([]uint64(nil), live[:pages]...), holders: hp[:pages:pages], group: make([]int32, n)}
	copy(t.group, old.group)
	t.byName = old.byName // parts are cloned as they change
	// The replicas of the slots that came or went.
	affected := map[string]bool{}
	for p := range maxPages {
		for c := live[p] ^ was[p]; c != 0; c &= c - 1 {
			s := p<<6 | bits.TrailingZeros64(c)
			if was.has(s) {
				affected[old.holders.at(s).replica] = true
			}
			if live.has(s) {
				affected[hp.at(s).replica] = true
			}
		}
	}
	var cloned [nameParts]bool
	for r := range affected {
		lowest := int32(-1)
		for _, s := range ix.slots[r] {
			if lowest < 0 || int32(s) < lowest {
				lowest = int32(s)
			}
		}
		for _, s := range ix.slots[r] {
			t.group[s] = lowest
		}
		t.byName.set(r, lowest, &cloned)
	}
	t.count = live.count()
	ix.tab.Store(t)
	// A replaced table with no reader now never gets one (acquire re-checks
	// the current table), so only tables still being read are kept.
	ix.retired = append(ix.retired, old)
	kept := 0
	for _, r := range ix.retired {
		if r.readers.Load() != 0 {
			ix.retired[kept] = r
			kept++
		}
	}
	clear(ix.retired[kept:])
	ix.retired = ix.retired[:kept]
}

// acquire returns the current table, registered as read until release. The
// re-check makes sure a writer that saw no readers on a replaced table
// cannot be followed by a reader using it.
func (ix *Index) acquire() *table {
	for {
		t := ix.tab.Load()
		t.readers.Add(1)
		if ix.tab.Load() == t {
			return t
		}
		t.readers.Add(-1)
	}
}

func release(t *table) { t.readers.Add(-1) }

// quiesce waits until no reader uses a replaced table, so slots retired in
// those tables may be reused. Lookups are short, so this is brief.
func (ix *Index) quiesce() {
	for _, t := range ix.retired {
		for t.readers.Load() != 0 {
			runtime.Gosched()
		}
	}
	clear(ix.retired)
	ix.retired = ix.retired[:0]
}
