package index

import "math/bits"

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
// remaining holder has. Replicas are appended in slot order.
func (ix *Index) Lookup(keys []uint64, dst []Match) []Match {
	tab := ix.acquire()
	defer release(tab)
	active := tab.live
	if active == 0 || len(keys) == 0 {
		return dst
	}
	var depth, cpuOnly [MaxHolders]int32
	for i, k := range keys {
		sh := ix.shard(k)
		sh.mu.RLock()
		e, _ := sh.t.get(k)
		sh.mu.RUnlock()
		held := (e.gpu | e.cpu) & active
		for gone := active &^ held; gone != 0; gone &= gone - 1 {
			depth[bits.TrailingZeros64(gone)] = int32(i)
		}
		active = held
		if active == 0 {
			break
		}
		for c := e.cpu &^ e.gpu & active; c != 0; c &= c - 1 {
			cpuOnly[bits.TrailingZeros64(c)]++
		}
	}
	for ; active != 0; active &= active - 1 {
		depth[bits.TrailingZeros64(active)] = int32(len(keys))
	}

	start := len(dst)
	for live := tab.live; live != 0; live &= live - 1 {
		s := bits.TrailingZeros64(live)
		if depth[s] == 0 {
			continue
		}
		h := tab.holders[s]
		m := Match{Replica: h.replica, Rank: h.rank, Blocks: int(depth[s]), GPUBlocks: int(depth[s] - cpuOnly[s])}
		if j := find(dst[start:], h.replica); j >= 0 {
			if better(m, dst[start+j]) {
				dst[start+j] = m
			}
			continue
		}
		dst = append(dst, m)
	}
	return dst
}

func find(ms []Match, replica string) int {
	for i := range ms {
		if ms[i].Replica == replica {
			return i
		}
	}
	return -1
}

func better(a, b Match) bool {
	if a.Blocks != b.Blocks {
		return a.Blocks > b.Blocks
	}
	if a.GPUBlocks != b.GPUBlocks {
		return a.GPUBlocks > b.GPUBlocks
	}
	return a.Rank < b.Rank
}
