package index

import (
	"math/bits"
	"slices"
)

// In-place replace. With every slot live, Replace cannot fill a fresh
// slot and swap it in: it adds the new keys to the replica's own slot,
// then clears the keys that slot no longer holds. The map is keyed by
// block, so finding a slot's keys meant a pass over the whole map per
// replica, and a fleet of MaxHolders replicas resending its snapshots
// took MaxHolders passes: O(n²). So while the index is full it keeps,
// per slot, a list of the keys the slot may hold (candidates): every key
// stored for it since, a superset of what it holds, since deletions do
// not edit it. The in-place Replace clears the stale keys among its
// slot's candidates, O(the replica's keys), and a fleet's resync is
// O(its entries) again. The lists are built by one pass over the map
// when an in-place Replace first needs them, follow every store after,
// and are dropped once sweeps free a sixteenth of the slots. They cost
// 8 bytes per candidate, at most twice the slot's entries plus
// candidateSlack before a list is compacted, and only while the index
// is full.

// candidateSlack is how far a slot's list may outgrow twice its entries
// before it is compacted.
const candidateSlack = 64

// noteStored records keys stored for slot hs (the writer, after store).
func (ix *Index) noteStored(hs int, keys []uint64) {
	if ix.cands == nil || len(keys) == 0 {
		return
	}
	l := append(ix.cands[hs], keys...)
	if len(l) > 2*(ix.counts[hs][GPU]+ix.counts[hs][CPU])+candidateSlack {
		l = ix.compactCandidates(hs, l)
	}
	ix.cands[hs] = l
}

// compactCandidates keeps the keys of l that slot hs holds, once each.
func (ix *Index) compactCandidates(hs int, l []uint64) []uint64 {
	slices.Sort(l)
	l = slices.Compact(l)
	return slices.DeleteFunc(l, func(k uint64) bool {
		t := &ix.shard(k).t
		s := t.ref(k, false)
		return s == nil || !t.hasBit(s, hs, GPU) && !t.hasBit(s, hs, CPU)
	})
}

// trackCandidates builds every slot's list with one pass over the map.
func (ix *Index) trackCandidates() {
	c := new([MaxHolders][]uint64)
	note := func(t *hashTable, s *slot, key uint64) {
		page := s.page()
		for w := s.gpu.Load() | s.cpu.Load(); w != 0; w &= w - 1 {
			hs := page<<6 | bits.TrailingZeros64(w)
			c[hs] = append(c[hs], key)
		}
		if e := t.ext(s); e != nil {
			for _, wd := range e.words {
				for w := wd.gpu | wd.cpu; w != 0; w &= w - 1 {
					hs := wd.page<<6 | bits.TrailingZeros64(w)
					c[hs] = append(c[hs], key)
				}
			}
		}
	}
	for i := range ix.shards {
		t := &ix.shards[i].t
		if t.hasZero.Load() {
			note(t, &t.zero, 0)
		}
		a := t.arr.Load()
		for j := range a.s {
			if key := a.s[j].key.Load(); key != 0 {
				note(t, &a.s[j], key)
			}
		}
	}
	ix.cands = c
}

// untrackCandidates drops the lists once a sixteenth of the slots is
// free, where Replace fills fresh slots again.
func (ix *Index) untrackCandidates() {
	if ix.cands != nil && ix.free() >= MaxHolders/16 {
		ix.cands = nil
	}
}

// dropStale clears, for slot hs, the keys among its candidates that keep
// does not list (per tier), and makes keep's keys its candidates.
func (ix *Index) dropStale(hs int, keep map[uint64][2]bool) {
	var stale [2][]uint64
	for _, k := range ix.cands[hs] {
		for _, t := range [2]Tier{GPU, CPU} {
			if !keep[k][t] {
				stale[t] = append(stale[t], k)
			}
		}
	}
	for _, t := range [2]Tier{GPU, CPU} {
		ix.del(hs, t, stale[t])
	}
	l := ix.cands[hs][:0]
	for k := range keep {
		l = append(l, k)
	}
	ix.cands[hs] = l
}
