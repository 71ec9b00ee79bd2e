package index

import (
	"math/bits"
	"slices"
)

// HolderCount is the number of live holders (replica ranks) of key: one
// probe of one key, with no walk and no Match per holder, so that a
// caller can find how deep a prompt is cached and how widely before
// asking for names (the narrowed candidates of router/replicas probe a
// few depths of every large decision this way). It counts ranks, so it
// bounds the replicas a Lookup of key would return from above.
func (ix *Index) HolderCount(key uint64) int {
	tab := ix.acquire()
	defer release(tab)
	if tab.onePage() {
		e := ix.shard(key).get(key)
		return bits.OnesCount64((e.gpu | e.cpu) & tab.live[0])
	}
	id := ix.shard(key).getID(key)
	n := 0
	count := func(x word) {
		if x.page < len(tab.live) {
			n += bits.OnesCount64((x.gpu | x.cpu) & tab.live[x.page])
		}
	}
	count(word{page: id.page, gpu: id.gpu, cpu: id.cpu})
	if id.set != nil {
		for _, x := range id.set.words {
			count(x)
		}
	}
	return n
}

// AppendHolders is Index.AppendHolders on model's index; dst unchanged
// for an unknown model.
func (ms *Models) AppendHolders(model string, key uint64, dst []string) []string {
	if ix := ms.get(model); ix != nil {
		return ix.AppendHolders(key, dst)
	}
	return dst
}

// HolderCount is Index.HolderCount on model's index; 0 for an unknown
// model.
func (ms *Models) HolderCount(model string, key uint64) int {
	if ix := ms.get(model); ix != nil {
		return ix.HolderCount(key)
	}
	return 0
}

// AppendHolders appends to dst the replicas holding key, one per replica
// whatever its ranks, in the order a Lookup of key alone lists them (by
// lowest slot): that Lookup's names, read in one probe, without a walk
// and its per-page scratch, for a caller that asks who holds a block and
// not how much of a prompt (the narrowed candidates of router/replicas).
func (ix *Index) AppendHolders(key uint64, dst []string) []string {
	tab := ix.acquire()
	defer release(tab)
	buf := groupBufs.Get().(*[]int32)
	defer groupBufs.Put(buf)
	groups := (*buf)[:0]
	add := func(x word) {
		if x.page >= len(tab.live) {
			return
		}
		for b := (x.gpu | x.cpu) & tab.live[x.page]; b != 0; b &= b - 1 {
			groups = append(groups, tab.group[x.page<<6|bits.TrailingZeros64(b)])
		}
	}
	if tab.onePage() {
		e := ix.shard(key).get(key)
		add(word{gpu: e.gpu, cpu: e.cpu})
	} else {
		id := ix.shard(key).getID(key)
		add(word{page: id.page, gpu: id.gpu, cpu: id.cpu})
		if id.set != nil {
			for _, x := range id.set.words {
				add(x)
			}
		}
	}
	// A replica's ranks share its group, and a set's pages need not
	// follow the inline page: sort only when out of order.
	if !slices.IsSorted(groups) {
		slices.Sort(groups)
	}
	groups = slices.Compact(groups)
	for _, g := range groups {
		dst = append(dst, tab.holders.at(int(g)).replica)
	}
	*buf = groups
	return dst
}
