package index

import (
	"math/bits"
	"slices"
	"sync"
)

// The paged walk serves tables with live holders beyond page 0. It keeps
// one active word per page, and touches only the pages a key holds and
// the holders that held the first key, so its cost follows the prompt's
// holders, not the index's: an index of 4,096 holders whose prompt is
// cached on a few of them walks about as fast as one of 64.

// pagedWalk is the scratch of one paged Lookup, pooled: its per-slot
// arrays are too large to clear per Lookup, so only the entries of the
// first key's holders are ever set and read.
type pagedWalk struct {
	active, onGPU [maxPages]uint64
	visit         [maxPages]int32 // the key (+1) that last visited a page
	list          []int           // pages that had active holders
	pages         int             // pages of list with active holders still
	first         []word          // the first key's live holders, by page
	st            [MaxHolders]slotState
	gen           uint32
	groups        []int32 // groups found, for Lookup's order
	only          slotSet // the groups a keepFunc keeps
	sink          uint64
}

// keepFunc, given the number of the first key's live holders, returns
// the groups (lowest slots) a walk follows, or nil for all of them.
type keepFunc func(holders int) *slotSet

// slotState is a paged walk's state of one slot: as a holder, its depth
// and CPU-only blocks; as a replica group (its lowest slot), the group's
// best slot, valid where stamp is the walk's gen. One line holds all, so
// a prompt spread over many pages touches one line per holder.
type slotState struct {
	depth, cpuOnly int32
	gpuEnd         int32 // with cpuOnly > 0: where its first CPU-only block is
	best           int32
	stamp          uint32
}

var pagedWalks = sync.Pool{New: func() any { return new(pagedWalk) }}

// getID reads k's id (see keyID), consistent as of one moment (see
// shard.get); the zero id when k is not indexed.
func (sh *shard) getID(k uint64) keyID {
	for {
		s1 := sh.seq.Load()
		var id keyID
		if k != 0 {
			a := sh.t.arr.Load()
			for i, n := a.home(k), 0; n < len(a.s); i, n = (i+1)&a.mask, n+1 {
				s := &a.s[i]
				key := s.key.Load()
				if key == k {
					id = sh.t.id(s)
					break
				}
				if key == 0 {
					break
				}
			}
		} else if sh.t.hasZero.Load() {
			id = sh.t.id(&sh.t.zero)
		}
		if s1&1 == 0 && sh.seq.Load() == s1 {
			return id
		}
	}
}

// walkPaged runs the exact walk over keys (a stride is not used: each key
// is read) and leaves each group's best slot in w.best; false when no live
// holder has the first key.
func (w *pagedWalk) run(ix *Index, tab *table, keys []uint64, keep keepFunc) bool {
	w.gen++
	if w.gen == 0 { // wrapped: old stamps could match again
		for i := range w.st {
			w.st[i].stamp = 0
		}
		w.gen = 1
	}
	w.list, w.first, w.groups = w.list[:0], w.first[:0], w.groups[:0]
	if len(keys) == 0 || tab.count == 0 {
		return false
	}
	clear(w.active[:])
	clear(w.onGPU[:])
	clear(w.visit[:])
	ix.touchKeys(keys[:min(readGroup, len(keys))])
	id := ix.shard(keys[0]).getID(keys[0])
	var only *slotSet
	if keep != nil {
		only = keep(liveHolders(tab, id))
	}
	cpuOnly := w.start(tab, word{page: id.page, gpu: id.gpu, cpu: id.cpu}, only)
	if id.set != nil {
		for _, x := range id.set.words {
			cpuOnly = w.start(tab, x, only) || cpuOnly
		}
	}
	if w.pages = len(w.list); w.pages == 0 {
		return false
	}
	// A key with the previous key's id has its holders: nothing changes,
	// unless a holder counts CPU-only blocks (then every key is read
	// whole, to count them). Otherwise a key is read as its difference
	// from the previous key (step).
	for g := 1; g < len(keys) && w.pages > 0; g += readGroup {
		w.sink += ix.touchKeys(keys[min(g+readGroup, len(keys)):min(g+2*readGroup, len(keys))])
		for i := g; i < min(g+readGroup, len(keys)) && w.pages > 0; i++ {
			next := ix.shard(keys[i]).getID(keys[i])
			switch {
			case cpuOnly:
				cpuOnly = w.stepAll(int32(i), next)
			case next == id && id != (keyID{}):
				continue
			default:
				cpuOnly = w.step(int32(i), id, next)
			}
			id = next
		}
	}
	for _, p := range w.list {
		w.depart(p, w.active[p], int32(len(keys)))
	}
	w.pickBest(tab)
	return true
}

// start takes x, a word of the first key, as its live holders' start,
// only those of the groups in only when it is set; it reports whether
// one of them has the key only on the CPU.
func (w *pagedWalk) start(tab *table, x word, only *slotSet) (cpuOnly bool) {
	if x.page >= len(tab.live) {
		return false
	}
	held := (x.gpu | x.cpu) & tab.live[x.page]
	if only != nil {
		for b := held; b != 0; b &= b - 1 {
			if !only.has(int(tab.group[x.page<<6|bits.TrailingZeros64(b)])) {
				held &^= b & -b
			}
		}
	}
	if held == 0 {
		return false
	}
	w.active[x.page], w.onGPU[x.page] = held, x.gpu&held
	w.list = append(w.list, x.page)
	w.first = append(w.first, word{page: x.page, gpu: held})
	for b := held; b != 0; b &= b - 1 {
		s := x.page<<6 | bits.TrailingZeros64(b)
		w.st[s].cpuOnly = 0
	}
	for c := x.cpu &^ x.gpu & held; c != 0; c &= c - 1 {
		st := &w.st[x.page<<6|bits.TrailingZeros64(c)]
		st.cpuOnly, st.gpuEnd = 1, 0
		cpuOnly = true
	}
	return cpuOnly
}

// apply makes page p's holders at key i those of gpu|cpu, retiring the
// active holders it lacks, and marks p visited by key i; it reports
// whether an active holder has key i only on the CPU.
func (w *pagedWalk) apply(i int32, p int, gpu, cpu uint64) (cpuOnly bool) {
	if p >= maxPages {
		return false
	}
	w.visit[p] = i + 1
	a := w.active[p]
	if a == 0 {
		return false
	}
	held := (gpu | cpu) & a
	if gone := a &^ held; gone != 0 {
		w.depart(p, gone, i)
		if held == 0 {
			w.pages--
		}
	}
	w.active[p], w.onGPU[p] = held, gpu&held
	for c := cpu &^ gpu & held; c != 0; c &= c - 1 {
		st := &w.st[p<<6|bits.TrailingZeros64(c)]
		if st.cpuOnly == 0 {
			st.gpuEnd = i
		}
		st.cpuOnly++
		cpuOnly = true
	}
	return cpuOnly
}

// stepAll reads key i whole (its id next), retiring the active holders
// it lacks; it reports whether an active holder has key i only on the
// CPU.
func (w *pagedWalk) stepAll(i int32, next keyID) (cpuOnly bool) {
	cpuOnly = w.apply(i, next.page, next.gpu, next.cpu)
	if next.set != nil {
		for _, x := range next.set.words {
			cpuOnly = w.apply(i, x.page, x.gpu, x.cpu) || cpuOnly
		}
	}
	n := 0
	for _, p := range w.list {
		if a := w.active[p]; a != 0 && w.visit[p] != i+1 {
			w.depart(p, a, i)
			w.active[p], w.onGPU[p] = 0, 0
			w.pages--
		}
		if w.active[p] != 0 {
			w.list[n] = p
			n++
		}
	}
	w.list = w.list[:n]
	return cpuOnly
}

// step reads key i (id next) as its difference from the previous key
// (id prev), which no active holder has only on the CPU: the pages of
// next's inline word and of the chunks whose pointers differ, then the
// pages of prev's that next no longer has. A change of the holder set
// thus costs the chunks it changed, not the set's every page; sets too
// small to have chunks are read whole. It reports whether an active
// holder has key i only on the CPU.
func (w *pagedWalk) step(i int32, prev, next keyID) (cpuOnly bool) {
	cpuOnly = w.apply(i, next.page, next.gpu, next.cpu)
	ps, ns := prev.set, next.set
	if ps == nil || ns == nil || ps.parts == nil || ns.parts == nil {
		if ns != nil {
			for _, x := range ns.words {
				cpuOnly = w.apply(i, x.page, x.gpu, x.cpu) || cpuOnly
			}
		}
		if ps != nil {
			w.gone(i, ps.words)
		}
	} else {
		for c := range ps.parts {
			pc, nc := ps.parts[c], ns.parts[c]
			if pc == nc {
				continue
			}
			if nc != nil {
				for _, x := range nc.words {
					cpuOnly = w.apply(i, x.page, x.gpu, x.cpu) || cpuOnly
				}
			}
			if pc != nil {
				w.gone(i, pc.words)
			}
		}
	}
	// prev's inline page: in next's set if its chunk differed (visited
	// then), else absent from next (prev's set lacks it, and so the
	// equal chunk of next's).
	if prev.page < maxPages && w.visit[prev.page] != i+1 {
		w.apply(i, prev.page, 0, 0)
	}
	return cpuOnly
}

// gone retires at key i the active holders of the pages of ws (words of
// the previous key) that key i did not visit: it lacks them.
func (w *pagedWalk) gone(i int32, ws []word) {
	for _, x := range ws {
		if x.page < maxPages && w.visit[x.page] != i+1 {
			w.apply(i, x.page, 0, 0)
		}
	}
}

// depart records depth d for the holders of page p in gone.
func (w *pagedWalk) depart(p int, gone uint64, d int32) {
	for ; gone != 0; gone &= gone - 1 {
		w.st[p<<6|bits.TrailingZeros64(gone)].depth = d
	}
}

// pickBest sets, per group of the first key's holders, its best slot.
func (w *pagedWalk) pickBest(tab *table) {
	for _, f := range w.first {
		for b := f.gpu; b != 0; b &= b - 1 {
			s := int32(f.page<<6 | bits.TrailingZeros64(b))
			g := tab.group[s]
			if w.st[g].stamp != w.gen {
				w.st[g].stamp, w.st[g].best = w.gen, s
				w.groups = append(w.groups, g)
				continue
			}
			if o := w.st[g].best; better(w.st[s].depth, w.st[s].depth-w.st[s].cpuOnly, tab.holders.at(int(s)).rank,
				w.st[o].depth, w.st[o].depth-w.st[o].cpuOnly, tab.holders.at(int(o)).rank) {
				w.st[g].best = s
			}
		}
	}
}

func (w *pagedWalk) match(tab *table, s int32) Match {
	h := tab.holders.at(int(s))
	st := &w.st[s]
	return Match{Replica: h.replica, Rank: h.rank, Blocks: int(st.depth), GPUBlocks: int(st.depth - st.cpuOnly),
		GPURun: int(gpuRun(st.depth, st.cpuOnly, st.gpuEnd))}
}

// liveHolders counts the live holders of the key of id.
func liveHolders(tab *table, id keyID) int {
	n := 0
	if id.page < len(tab.live) {
		n = bits.OnesCount64((id.gpu | id.cpu) & tab.live[id.page])
	}
	if id.set != nil {
		for _, x := range id.set.words {
			if x.page < len(tab.live) {
				n += bits.OnesCount64((x.gpu | x.cpu) & tab.live[x.page])
			}
		}
	}
	return n
}

// lookupPaged is LookupStride over a table with more than one page.
func (ix *Index) lookupPaged(tab *table, keys []uint64, dst []Match) []Match {
	w := pagedWalks.Get().(*pagedWalk)
	defer pagedWalks.Put(w)
	if !w.run(ix, tab, keys, nil) {
		return dst
	}
	slices.Sort(w.groups)
	for _, g := range w.groups {
		dst = append(dst, w.match(tab, w.st[g].best))
	}
	return dst
}

// lookupReplicasPaged is LookupReplicas over a table with more than one
// page; out is already sized and cleared.
func (ix *Index) lookupReplicasPaged(tab *table, keys []uint64, replicas []string, out []Match) []Match {
	w := pagedWalks.Get().(*pagedWalk)
	defer pagedWalks.Put(w)
	groups := ix.groups.remembered(tab, replicas)
	var buf *[]int32
	defer func() {
		if buf != nil {
			groupBufs.Put(buf)
		}
	}()
	// A first block held far more widely than the list is long (a prefix
	// every replica caches, scored over a narrowed list): resolve the
	// candidates first and follow only their holders, so the walk costs
	// the list, not the fleet.
	keep := func(holders int) *slotSet {
		if groups != nil || holders <= wideFirst*len(replicas) {
			return nil
		}
		groups, buf = resolve(tab, replicas)
		clear(w.only[:])
		for _, g := range groups {
			if g >= 0 {
				w.only.add(int(g))
			}
		}
		return &w.only
	}
	if !w.run(ix, tab, keys, keep) {
		return out
	}
	if groups == nil && len(w.groups)*bits.Len(uint(len(replicas))) <= 8*len(replicas) && sortedNames(replicas) {
		// A sorted list not remembered (a narrowed one,
		// router/replicas), with few matches for its length: find the
		// matched groups' names in it, O(matches · log candidates),
		// instead of each candidate's group by name (or hashing the
		// list to see whether to remember it).
		at := 0
		for _, g := range w.groups {
			i, ok := gallop(replicas, at, tab.holders.at(int(g)).replica)
			if ok {
				out[i] = w.match(tab, w.st[g].best)
			}
			at = i
		}
		return out
	}
	if groups == nil {
		switch twice := ix.groups.missedTwice(replicas); {
		case twice:
			groups = ix.groups.remember(tab, replicas)
		default:
			groups, buf = resolve(tab, replicas)
		}
	}
	for i, g := range groups {
		if g >= 0 && w.st[g].stamp == w.gen {
			out[i] = w.match(tab, w.st[g].best)
		}
	}
	return out
}

// wideFirst is how many times more live holders than candidates the
// first key must have for LookupReplicas to follow only the candidates'.
const wideFirst = 4

// gallop is slices.BinarySearch(names, name) (names sorted) that looks
// from position from onwards first, doubling its step: the matched
// groups come in slot order, which is mostly the order replicas joined
// and so often their names' order, so each name is found a step or two
// past the one before, in fewer comparisons than a search of the whole.
func gallop(names []string, from int, name string) (int, bool) {
	if from >= len(names) || name < names[from] {
		return slices.BinarySearch(names[:min(from, len(names))], name)
	}
	lo, step := from, 1 // names[lo] <= name
	hi := lo + step
	for hi < len(names) && names[hi] <= name {
		lo, step = hi, step*2
		hi = lo + step
	}
	i, ok := slices.BinarySearch(names[lo:min(hi, len(names))], name)
	return lo + i, ok
}

// sortedNames reports whether names are in strictly increasing order (so
// each is found by binary search, once).
func sortedNames(names []string) bool {
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			return false
		}
	}
	return true
}
