package index

import "sync/atomic"

// groupCache remembers, for the candidate lists LookupReplicas saw last,
// each candidate's replica group in one slot table. A router asks about
// the same replicas, in the same order, on request after request, so
// comparing the list with the remembered one (the same strings, so each
// comparison stops at the pointer) replaces hashing every name on every
// lookup. An entry is immutable; a list or table not remembered builds a
// new entry in place of the oldest.
type groupCache struct {
	entries [groupCacheSize]atomic.Pointer[groupsOf]
	next    atomic.Uint32 // the entry the next miss replaces
}

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

// groups returns the group of each of replicas in tab.
func (c *groupCache) groups(tab *table, replicas []string) []int32 {
	for i := range c.entries {
		if g := c.entries[i].Load(); g != nil && g.tab == tab && equalNames(g.names, replicas) {
			return g.group
		}
	}
	g := &groupsOf{tab: tab, names: append([]string(nil), replicas...), group: make([]int32, len(replicas))}
	for i, name := range replicas {
		g.group[i] = -1
		if s, ok := tab.byName[name]; ok {
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
