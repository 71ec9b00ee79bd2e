package index

import (
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
	holders []holder // len(live)*64
	// group[s] is the lowest live slot of the same replica as slot s, so
	// Lookup merges a replica's ranks without comparing names; byName maps
	// each live replica to its group.
	group   []int32
	byName  map[string]int32
	count   int // live slots
	readers atomic.Int64
}

// onePage reports whether every live slot is in page 0.
func (t *table) onePage() bool { return len(t.live) <= 1 }

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
			return s, nil
		}
	}
	return 0, ErrFull
}

// retire unmaps replica's live slots and returns them; the caller
// publishes and sweeps.
func (ix *Index) retire(replica string) (dead slotSet, any bool) {
	for h, s := range ix.slots {
		if h.replica == replica {
			dead.add(s)
			any = true
			delete(ix.slots, h)
		}
	}
	return dead, any
}

// publish installs a modified copy of the slot table: edit sets and clears
// slots in the live set and names their holders. Only the replicas whose
// slots changed get their groups recomputed, so a fleet of thousands of
// holders joining one by one costs a copy per join, not a rehash of every
// name.
func (ix *Index) publish(edit func(live *slotSet, holders []holder)) {
	old := ix.tab.Load()
	var live, was slotSet
	copy(was[:], old.live)
	live = was
	holders := make([]holder, MaxHolders)
	copy(holders, old.holders)
	edit(&live, holders)
	pages := 1
	for p, w := range live {
		if w != 0 {
			pages = p + 1
		}
	}
	n := pages * 64
	t := &table{live: append([]uint64(nil), live[:pages]...), holders: holders[:n:n], group: make([]int32, n)}
	copy(t.group, old.group)
	t.byName = maps.Clone(old.byName)
	// The replicas of the slots that came or went.
	affected := map[string]bool{}
	for p := range maxPages {
		for c := live[p] ^ was[p]; c != 0; c &= c - 1 {
			s := p<<6 | bits.TrailingZeros64(c)
			if was.has(s) {
				affected[old.holders[s].replica] = true
			}
			if live.has(s) {
				affected[holders[s].replica] = true
			}
		}
	}
	for r := range affected {
		g0, had := old.byName[r]
		lowest := int32(-1)
		var mine []int
		for p := range pages {
			for w := live[p]; w != 0; w &= w - 1 {
				s := p<<6 | bits.TrailingZeros64(w)
				stayed := was.has(s) && had && old.group[s] == g0
				if stayed || (!was.has(s) && holders[s].replica == r) {
					mine = append(mine, s)
					if lowest < 0 {
						lowest = int32(s)
					}
				}
			}
		}
		for _, s := range mine {
			t.group[s] = lowest
		}
		if lowest < 0 {
			delete(t.byName, r)
		} else {
			t.byName[r] = lowest
		}
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
