package index

import (
	"math/bits"
	"slices"
)

// Match is how much of a prompt's prefix one replica already caches.
type Match struct {
	Replica string
	// Rank is the data-parallel rank with the longest match.
	Rank int
	// Blocks is the number of leading prompt blocks the rank holds on any
	// tier; GPUBlocks of those are on the GPU (the rest only on CPU).
	Blocks    int
	GPUBlocks int
}

// Lookup walks keys (a prompt's block keys, in order) and appends to dst one
// Match per replica that holds at least the first block, with its best rank
// (longest match, then most GPU blocks). The walk stops at the first key no
// remaining holder has. Replicas are appended in the order of their lowest
// slot.
func (ix *Index) Lookup(keys []uint64, dst []Match) []Match {
	return ix.LookupStride(keys, 1, dst)
}

// LookupStride is Lookup for long prompts: with stride > 1 it reads the
// first key, then probes every stride-th key and reads the keys in
// between only where a holder drops out or its blocks move from GPU to
// CPU memory. It assumes each holder's blocks of one chain form a prefix,
// GPU blocks first (vLLM frees and evicts a chain from its tail, and
// offloads the evicted part), so a holder that has a probed key is taken
// to have the keys before it. Under that assumption the result equals
// Lookup's; a holder with a hole in its chain may be credited past the
// hole. With stride <= 1 the walk is exact.
func (ix *Index) LookupStride(keys []uint64, stride int, dst []Match) []Match {
	tab := ix.acquire()
	defer release(tab)
	w := walks.Get().(*walk)
	defer walks.Put(w)
	if !w.run(ix, tab, keys, stride, nil) {
		return dst
	}
	if !slices.IsSorted(w.groups) { // the first key's inline page came first
		slices.Sort(w.groups)
	}
	for _, g := range w.groups {
		dst = append(dst, w.match(tab, g))
	}
	return dst
}

// LookupReplicas is LookupStride with the matches in the caller's order:
// it returns out resized to len(replicas), where out[i] is the match of
// replicas[i], or the zero Match when it holds no block of the prompt (or
// is unknown). The scheduler scores its candidates this way without
// joining the matches to them by name on every request.
func (ix *Index) LookupReplicas(keys []uint64, stride int, replicas []string, out []Match) []Match {
	if cap(out) < len(replicas) {
		out = make([]Match, len(replicas))
	}
	out = out[:len(replicas)]
	clear(out)
	tab := ix.acquire()
	defer release(tab)
	w := walks.Get().(*walk)
	defer walks.Put(w)
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
	if !w.run(ix, tab, keys, stride, keep) {
		return out
	}
	if groups == nil && len(replicas) < len(tab.byName) && len(w.groups)*bits.Len(uint(len(replicas))) <= 8*len(replicas) && sortedNames(replicas) {
		// A sorted list not remembered, shorter than the fleet (a
		// narrowed one, router/replicas), with few matches for its
		// length: find the matched groups' names in it, O(matches · log
		// candidates), instead of each candidate's group by name (or
		// hashing the list to see whether to remember it). A list of the
		// whole fleet, asked on every request, is remembered instead.
		at := 0
		for _, g := range w.groups {
			i, ok := gallop(replicas, at, tab.holders[g].replica)
			if ok {
				out[i] = w.match(tab, g)
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
		if g >= 0 && w.found(g) {
			out[i] = w.match(tab, g)
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
