package index

import "math/bits"

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

// HolderCount is Index.HolderCount on model's index; 0 for an unknown
// model.
func (ms *Models) HolderCount(model string, key uint64) int {
	if ix := ms.get(model); ix != nil {
		return ix.HolderCount(key)
	}
	return 0
}
