package index

import (
	"math/bits"
	"runtime"
	"sync/atomic"
)

// Holder slots: each (replica, rank) owns one bit position in every key's
// holder sets. Readers learn which slots are alive, and whose they are, from
// an immutable table the writer replaces atomically.

// holder names the owner of a slot.
type holder struct {
	replica string
	rank    int
}

// table is the immutable slot table readers see: which slots are alive and
// whom they belong to. readers counts Lookups using it, so a slot is reused
// only when no reader can still see its old owner's bits as live.
type table struct {
	live    uint64
	holders [MaxHolders]holder
	// group[s] is the lowest live slot of the same replica as slot s, so
	// Lookup merges a replica's ranks without comparing names; byName maps
	// each live replica to its group.
	group   [MaxHolders]uint8
	byName  map[string]uint8
	readers atomic.Int64
}

// alloc reserves a free slot (not yet live).
func (ix *Index) alloc() (int, error) {
	if ix.used == ^uint64(0) {
		return 0, ErrFull
	}
	s := bits.TrailingZeros64(^ix.used)
	ix.used |= 1 << s
	ix.counts[s] = [2]int{}
	return s, nil
}

// retire unmaps replica's live slots and returns them as a mask; the caller
// publishes and sweeps.
func (ix *Index) retire(replica string) uint64 {
	var mask uint64
	for h, s := range ix.slots {
		if h.replica == replica {
			mask |= 1 << s
			delete(ix.slots, h)
		}
	}
	return mask
}

// publish installs a modified copy of the slot table.
func (ix *Index) publish(edit func(*table)) {
	old := ix.tab.Load()
	t := &table{live: old.live, holders: old.holders}
	edit(t)
	first := map[string]uint8{}
	for live := t.live; live != 0; live &= live - 1 {
		s := uint8(bits.TrailingZeros64(live))
		g, ok := first[t.holders[s].replica]
		if !ok {
			g = s
			first[t.holders[s].replica] = s
		}
		t.group[s] = g
	}
	t.byName = first
	ix.tab.Store(t)
	// A replaced table with no reader now never gets one (acquire re-checks
	// the current table), so only tables still being read are kept.
	ix.retired = append(ix.retired, old)
	n := 0
	for _, r := range ix.retired {
		if r.readers.Load() != 0 {
			ix.retired[n] = r
			n++
		}
	}
	clear(ix.retired[n:])
	ix.retired = ix.retired[:n]
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
