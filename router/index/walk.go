package index

import (
	"math/bits"
	"sync"
)

// The walk answers every Lookup, whatever the fleet's size. It follows
// the live holders of the prompt's first key (or only those of the
// groups a keepFunc keeps) down the prompt and retires each at the first
// key it lacks: a holder's depth is the number of leading keys it holds,
// and its CPU-only blocks are those of them it holds on the CPU alone. It
// stops once no holder it follows is left. A replica's match is its best
// rank's (better); a replica none of whose ranks holds the first key has
// none.
//
// A key's holders are read as its id (keyID): its inline page's holder
// sets and the pointer of its interned set of other pages. A key with
// the previous key's id has its holders, and costs a probe and a
// comparison; a key whose id differs is read as its difference from the
// previous key (step). The walk thus keeps one active word per page and
// touches only the pages a key holds and the holders of the first key,
// so its cost follows the prompt's holders, not the index's: an index of
// 4,096 holders whose prompt is cached on a few of them walks about as
// fast as one of 64. A fleet of at most 64 holders has page 0 only, and
// each of its keys' ids is that page's two words. One walk for every
// size keeps the rules in one place; its price is that a hot walk over
// 64 holders costs about a tenth more than one specialised to a single
// word did (the id it carries from key to key is four words, not two).
//
// With a stride, the walk reads the first key, then probes the last key
// of each run of stride keys (the runs end where they would had the
// probing started at the first key) and reads a run key by key only
// where a followed holder lacks the probe or moved from the GPU to the
// CPU (see LookupStride).

// walk is the scratch of one Lookup, pooled: its per-slot array is too
// large to clear per Lookup, so only the entries of the first key's
// holders are ever set and read, and its per-page arrays are zero
// between walks (a walk clears the pages it made active).
type walk struct {
	// active holds, per page, the followed holders that held every key so
	// far; onGPU those of them whose last key read was on the GPU (a
	// strided probe leaves it as it was).
	active, onGPU [maxPages]uint64
	visit         [maxPages]int32 // the key (+1) that last visited a page
	list          []int           // pages that had active holders
	pages         int             // pages of list with active holders still
	first         []word          // the first key's followed holders, by page
	st            [MaxHolders]slotState
	gen           uint32
	groups        []int32 // groups found, for Lookup's order
	only          slotSet // the groups a keepFunc keeps
	sink          uint64
}

// keepFunc, given the number of the first key's live holders, returns
// the groups (lowest slots) a walk follows, or nil for all of them.
type keepFunc func(holders int) *slotSet

// slotState is a walk's state of one slot: as a holder, its depth and
// CPU-only blocks; as a replica group (its lowest slot), the group's
// best slot, valid where stamp is the walk's gen. One line holds all, so
// a prompt spread over many pages touches one line per holder.
type slotState struct {
	depth, cpuOnly int32
	best           int32
	stamp          uint32
}

var walks = sync.Pool{New: func() any { return new(walk) }}

// run walks keys, probing every stride-th key where stride > 1 (see
// LookupStride), and leaves each followed group's best slot in w.st;
// false when no live holder it follows has the first key.
func (w *walk) run(ix *Index, tab *table, keys []uint64, stride int, keep keepFunc) bool {
	if w.gen++; w.gen == 0 { // wrapped: old stamps could match again
		for i := range w.st {
			w.st[i].stamp = 0
		}
		w.gen = 1
	}
	w.list, w.first, w.groups = w.list[:0], w.first[:0], w.groups[:0]
	if len(keys) == 0 || tab.count == 0 {
		return false
	}
	if stride <= 1 { // the scan from key 1 reads them; a strided walk probes first
		w.sink += ix.touchKeys(keys[:min(readGroup, len(keys))])
	}
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
	if stride <= 1 {
		w.scan(ix, keys, 1, id, cpuOnly)
	} else {
		w.strided(ix, keys, stride, id, cpuOnly)
	}
	for _, p := range w.list {
		w.depart(p, w.active[p], int32(len(keys)))
	}
	w.pickBest(tab)
	for _, f := range w.first { // every page the walk made active
		w.active[f.page], w.onGPU[f.page], w.visit[f.page] = 0, 0, 0
	}
	return true
}

// scan reads keys[from:] one by one, the key before from having id
// prev (cpuOnly: an active holder has it only on the CPU), and returns
// the id and cpuOnly of the last key it read. A key with the previous
// key's id changes nothing, unless a holder counts CPU-only blocks (then
// every key is read whole, to count them); any other key is read as its
// difference from the previous one (step).
//
// The slots a walk reads are scattered over the whole table, so nearly
// every read misses the cache. scan therefore touches the keys a group
// at a time, a group ahead of the keys it reads (the caller touched the
// first group): a loop of nothing but independent loads keeps a group's
// misses in flight together, where a touch inside the reading loop would
// wait behind the reads.
func (w *walk) scan(ix *Index, keys []uint64, from int, prev keyID, cpuOnly bool) (keyID, bool) {
	to := len(keys)
	for g := from; g < to; g += readGroup {
		end := min(g+readGroup, to)
		w.sink += ix.touchKeys(keys[end:min(end+readGroup, to)])
		for i := g; i < end; i++ {
			next := ix.shard(keys[i]).getID(keys[i])
			switch {
			case cpuOnly:
				cpuOnly = w.stepAll(int32(i), next)
			case next == prev && next.gpu|next.cpu != 0: // a held key's inline word is never empty
				continue
			default:
				cpuOnly = w.step(int32(i), prev, next)
			}
			prev = next
			if w.pages == 0 {
				return prev, cpuOnly
			}
		}
	}
	return prev, cpuOnly
}

// strided walks keys[1:] (the first key read, its id prev) in runs
// ending at every stride-th key: it probes a run's last key and credits
// the whole run to the active holders when each of them holds it and
// none that was on the GPU has it only on the CPU, and reads the run
// key by key otherwise.
func (w *walk) strided(ix *Index, keys []uint64, stride int, prev keyID, cpuOnly bool) {
	// Runs end where a walk probing from the first key would end them:
	// the first is keys[1:stride].
	for pos, end := 1, min(stride, len(keys)); pos < len(keys) && w.pages > 0; pos, end = end, min(end+stride, len(keys)) {
		probe := ix.shard(keys[end-1]).getID(keys[end-1])
		// holdAll, inline for a key of one page (every key, up to 64
		// holders).
		onCPU, ok := w.holdsPage(probe.page, probe.gpu, probe.cpu)
		if probe.set != nil {
			onCPU, ok = w.holdAll(probe)
		} else if ok {
			ok = w.pages == 1 && probe.page < maxPages && w.active[probe.page] != 0
		}
		if ok {
			if onCPU {
				w.creditCPU(probe, int32(end-pos))
			}
			prev, cpuOnly = probe, onCPU
		} else {
			w.sink += ix.touchKeys(keys[pos:min(pos+readGroup, end)])
			prev, cpuOnly = w.scan(ix, keys[:end], pos, prev, cpuOnly)
		}
	}
}

// holdAll reports whether every active holder holds the key of id, none
// that was on the GPU only on the CPU; onCPU whether one of them holds it
// only on the CPU.
func (w *walk) holdAll(id keyID) (onCPU, ok bool) {
	onCPU, ok = w.holdsPage(id.page, id.gpu, id.cpu)
	covered := 0
	if id.page < maxPages && w.active[id.page] != 0 {
		covered++
	}
	if id.set != nil {
		for _, x := range id.set.words {
			c, held := w.holdsPage(x.page, x.gpu, x.cpu)
			onCPU, ok = onCPU || c, ok && held
			if x.page < maxPages && w.active[x.page] != 0 {
				covered++
			}
		}
	}
	return onCPU, ok && covered == w.pages
}

// holdsPage is holdAll for page p of a key whose holders there are
// gpu|cpu.
func (w *walk) holdsPage(p int, gpu, cpu uint64) (onCPU, ok bool) {
	if p >= maxPages {
		return false, true
	}
	a := w.active[p]
	cpuOnly := cpu &^ gpu & a
	return cpuOnly != 0, (gpu|cpu)&a == a && cpuOnly&w.onGPU[p] == 0
}

// creditCPU counts n CPU-only blocks for each active holder that holds
// the key of id only on the CPU.
func (w *walk) creditCPU(id keyID, n int32) {
	w.creditPage(id.page, id.gpu, id.cpu, n)
	if id.set != nil {
		for _, x := range id.set.words {
			w.creditPage(x.page, x.gpu, x.cpu, n)
		}
	}
}

// creditPage is creditCPU for page p of a key whose holders there are
// gpu|cpu.
func (w *walk) creditPage(p int, gpu, cpu uint64, n int32) {
	if p >= maxPages {
		return
	}
	for c := cpu &^ gpu & w.active[p]; c != 0; c &= c - 1 {
		w.st[p<<6|bits.TrailingZeros64(c)].cpuOnly += n
	}
}

// start takes x, a word of the first key, as its live holders' start,
// only those of the groups in only when it is set; it reports whether
// one of them has the key only on the CPU.
func (w *walk) start(tab *table, x word, only *slotSet) (cpuOnly bool) {
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
		w.st[x.page<<6|bits.TrailingZeros64(c)].cpuOnly = 1
		cpuOnly = true
	}
	return cpuOnly
}

// apply makes page p's holders at key i those of gpu|cpu, retiring the
// active holders it lacks, and marks p visited by key i (only a page
// with active holders: the others' visits matter to no one); it reports
// whether an active holder has key i only on the CPU.
func (w *walk) apply(i int32, p int, gpu, cpu uint64) (cpuOnly bool) {
	if p >= maxPages || w.active[p] == 0 {
		return false
	}
	w.visit[p] = i + 1
	a := w.active[p]
	held := (gpu | cpu) & a
	if gone := a &^ held; gone != 0 {
		w.depart(p, gone, i)
		if held == 0 {
			w.pages--
		}
	}
	w.active[p], w.onGPU[p] = held, gpu&held
	for c := cpu &^ gpu & held; c != 0; c &= c - 1 {
		w.st[p<<6|bits.TrailingZeros64(c)].cpuOnly++
		cpuOnly = true
	}
	return cpuOnly
}

// stepAll reads key i whole (its id next), retiring the active holders
// it lacks; it reports whether an active holder has key i only on the
// CPU.
func (w *walk) stepAll(i int32, next keyID) (cpuOnly bool) {
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
func (w *walk) step(i int32, prev, next keyID) (cpuOnly bool) {
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
func (w *walk) gone(i int32, ws []word) {
	for _, x := range ws {
		if x.page < maxPages && w.visit[x.page] != i+1 {
			w.apply(i, x.page, 0, 0)
		}
	}
}

// depart records depth d for the holders of page p in gone.
func (w *walk) depart(p int, gone uint64, d int32) {
	for ; gone != 0; gone &= gone - 1 {
		w.st[p<<6|bits.TrailingZeros64(gone)].depth = d
	}
}

// pickBest sets, per group of the first key's followed holders, its best
// slot.
func (w *walk) pickBest(tab *table) {
	for _, f := range w.first {
		for b := f.gpu; b != 0; b &= b - 1 {
			s := int32(f.page<<6 | bits.TrailingZeros64(b))
			g := tab.group[s]
			if w.st[g].stamp != w.gen {
				w.st[g].stamp, w.st[g].best = w.gen, s
				w.groups = append(w.groups, g)
				continue
			}
			if o := w.st[g].best; better(w.st[s].depth, w.st[s].depth-w.st[s].cpuOnly, tab.holders[s].rank,
				w.st[o].depth, w.st[o].depth-w.st[o].cpuOnly, tab.holders[o].rank) {
				w.st[g].best = s
			}
		}
	}
}

// found reports whether the walk matched group g.
func (w *walk) found(g int32) bool { return w.st[g].stamp == w.gen }

// match is the Match of group g, which the walk found.
func (w *walk) match(tab *table, g int32) Match {
	s := w.st[g].best
	h := tab.holders[s]
	return Match{Replica: h.replica, Rank: h.rank, Blocks: int(w.st[s].depth), GPUBlocks: int(w.st[s].depth - w.st[s].cpuOnly)}
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

// better orders a replica's ranks: longest match, then most GPU blocks,
// then lowest rank.
func better(blocks, gpu int32, rank int, bBlocks, bGPU int32, bRank int) bool {
	if blocks != bBlocks {
		return blocks > bBlocks
	}
	if gpu != bGPU {
		return gpu > bGPU
	}
	return rank < bRank
}
