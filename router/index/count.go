package index

// HolderCount is the number of live holders (replica ranks) of key: one
// probe of one key, with no walk and no Match per holder, so that a
// caller can find how deep a prompt is cached and how widely before
// asking for names (the narrowed candidates of router/replicas probe a
// few depths of every large decision this way). It counts ranks, so it
// bounds the replicas a Lookup of key would return from above.
func (ix *Index) HolderCount(key uint64) int {
	tab := ix.acquire()
	defer release(tab)
	return liveHolders(tab, ix.shard(key).getID(key))
}

// HolderCount is Index.HolderCount on model's index; 0 for an unknown
// model.
func (ms *Models) HolderCount(model string, key uint64) int {
	if ix := ms.get(model); ix != nil {
		return ix.HolderCount(key)
	}
	return 0
}
