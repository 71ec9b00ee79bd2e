package index

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// groupCache remembers, for the candidate lists LookupReplicas saw last,
// each candidate's replica group in one slot table. A router asks about
// the same replicas, in the same order, on request after request, so
// comparing the list with the remembered one (the same strings, so each
// comparison stops at the pointer) replaces hashing every name on every
// lookup. An entry is immutable; a list or table not remembered builds a
// new entry in place of the oldest once it misses twice in a row: a large
// fleet's candidates are narrowed to the prompt's holders and a random
// sample (router/replicas), a list seldom seen twice, which must neither
// allocate nor push the model's own lists out.
type groupCache struct {
	entries [groupCacheSize]atomic.Pointer[groupsOf]
	next    atomic.Uint32 // the entry the next miss replaces
	missed  atomic.Uint64 // the fingerprint of the list that missed last
}

// groupSeed seeds the lists' fingerprints.
var groupSeed = maphash.MakeSeed()

// groupBufs are the groups of lists resolved without being remembered.
var groupBufs = sync.Pool{New: func() any { return new([]int32) }}

// groupCacheSize is how many candidate lists are remembered per Index: a
// model's replicas, plus a few LoRA adapters' subsets of them.
const groupCacheSize = 4

// groupsOf is one remembered list: group[i] is the group of names[i] in
// tab, or -1 when tab has no such replica.
type groupsOf struct {
	tab   *table
	names []string
	group []int32
}

// groups returns the group of each of replicas in tab: a remembered
// entry's, or, for a list not remembered yet, in buf, a groupBufs buffer
// the caller puts back once done with the groups (nil otherwise).
func (c *groupCache) groups(tab *table, replicas []string) (_ []int32, buf *[]int32) {
	if g := c.remembered(tab, replicas); g != nil {
		return g, nil
	}
	if !c.missedTwice(replicas) {
		return resolve(tab, replicas)
	}
	return c.remember(tab, replicas), nil
}

// resolve returns the groups of replicas in tab without remembering them,
// in a groupBufs buffer the caller puts back.
func resolve(tab *table, replicas []string) ([]int32, *[]int32) {
	buf := groupBufs.Get().(*[]int32)
	if cap(*buf) < len(replicas) {
		*buf = make([]int32, len(replicas))
	}
	out := (*buf)[:len(replicas)]
	for i, name := range replicas {
		out[i] = -1
		if s, ok := tab.byName.get(name); ok {
			out[i] = s
		}
	}
	return out, buf
}

// remembered returns the groups of a remembered list, nil when replicas
// is not one.
func (c *groupCache) remembered(tab *table, replicas []string) []int32 {
	for i := range c.entries {
		if g := c.entries[i].Load(); g != nil && g.tab == tab && equalNames(g.names, replicas) {
			return g.group
		}
	}
	return nil
}

// missedTwice reports whether replicas is the list that missed last,
// noting it as the last one otherwise.
func (c *groupCache) missedTwice(replicas []string) bool {
	var h maphash.Hash
	h.SetSeed(groupSeed)
	for _, name := range replicas {
		h.WriteString(name)
		h.WriteByte(0)
	}
	fp := h.Sum64()
	return c.missed.Swap(fp) == fp
}

// remember resolves replicas in tab and remembers them in place of the
// oldest entry.
func (c *groupCache) remember(tab *table, replicas []string) []int32 {
	g := &groupsOf{tab: tab, names: append([]string(nil), replicas...), group: make([]int32, len(replicas))}
	for i, name := range replicas {
		g.group[i] = -1
		if s, ok := tab.byName.get(name); ok {
			g.group[i] = s
		}
	}
	c.entries[c.next.Add(1)%groupCacheSize].Store(g)
	return g.group
}

func equalNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
