package index

import "sync"

// Models keeps one Index per model, because an Index serves at most
// MaxHolders replica ranks and prompts of different models never share
// cached blocks. It satisfies the scheduler's prefix-index interface.
type Models struct {
	opts Options

	mu sync.RWMutex
	m  map[string]*Index
}

// NewModels returns an empty set; every Index it creates uses opts.
func NewModels(opts Options) *Models { return &Models{opts: opts, m: map[string]*Index{}} }

// For returns model's Index, creating it on first use.
func (ms *Models) For(model string) *Index {
	if ix := ms.get(model); ix != nil {
		return ix
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ix := ms.m[model]
	if ix == nil {
		ix = New(ms.opts)
		ms.m[model] = ix
	}
	return ix
}

// get returns model's Index, nil when there is none.
func (ms *Models) get(model string) *Index {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	return ms.m[model]
}

// Lookup is Index.Lookup on model's index; an unknown model matches nothing.
func (ms *Models) Lookup(model string, keys []uint64, dst []Match) []Match {
	return ms.LookupStride(model, keys, 1, dst)
}

// LookupStride is Index.LookupStride on model's index.
func (ms *Models) LookupStride(model string, keys []uint64, stride int, dst []Match) []Match {
	if ix := ms.get(model); ix != nil {
		return ix.LookupStride(keys, stride, dst)
	}
	return dst
}

// LookupReplicas is Index.LookupReplicas on model's index; for an unknown
// model every replica matches nothing.
func (ms *Models) LookupReplicas(model string, keys []uint64, stride int, replicas []string, out []Match) []Match {
	if ix := ms.get(model); ix != nil {
		return ix.LookupReplicas(keys, stride, replicas, out)
	}
	return append(out[:0], make([]Match, len(replicas))...)
}

// Remove drops replica from every model's index.
func (ms *Models) Remove(replica string) {
	ms.mu.RLock()
	all := make([]*Index, 0, len(ms.m))
	for _, ix := range ms.m {
		all = append(all, ix)
	}
	ms.mu.RUnlock()
	for _, ix := range all {
		ix.Remove(replica)
	}
}

// Oversized is Index.Oversized over every model's index.
func (ms *Models) Oversized(capacity func(replica string) (gpu, cpu int, ok bool), slack float64) []Oversize {
	ms.mu.RLock()
	all := make([]*Index, 0, len(ms.m))
	for _, ix := range ms.m {
		all = append(all, ix)
	}
	ms.mu.RUnlock()
	var out []Oversize
	for _, ix := range all {
		out = append(out, ix.Oversized(capacity, slack)...)
	}
	return out
}
