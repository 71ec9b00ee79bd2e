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
// remaining holder has. Replicas are appended in the order of their lowest
// slot.
func (ix *Index) Lookup(keys []uint64, dst []Match) []Match {
	tab := ix.acquire()
	defer release(tab)
	active := tab.live
	if active == 0 || len(keys) == 0 {
		return dst
	}
	var depth, cpuOnly [MaxHolders]int32
	var sink uint64
	for i, k := range keys {
		if i > 0 && i+touchAhead < len(keys) {
			sink += ix.shard(keys[i+touchAhead]).touch(keys[i+touchAhead])
		}
		e := ix.shard(k).get(k)
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
	_ = sink

	// Best rank per replica (group), then one Match per replica in slot order.
	var best [MaxHolders]int8
	for i := range best {
		best[i] = -1
	}
	for live := tab.live; live != 0; live &= live - 1 {
		s := bits.TrailingZeros64(live)
		if depth[s] == 0 {
			continue
		}
		g := tab.group[s]
		if b := best[g]; b < 0 || better(depth[s], depth[s]-cpuOnly[s], tab.holders[s].rank,
			depth[b], depth[b]-cpuOnly[b], tab.holders[b].rank) {
			best[g] = int8(s)
		}
	}
	for live := tab.live; live != 0; live &= live - 1 {
		s := bits.TrailingZeros64(live)
		if tab.group[s] != uint8(s) || best[s] < 0 {
			continue
		}
		b := best[s]
		h := tab.holders[b]
		dst = append(dst, Match{Replica: h.replica, Rank: h.rank, Blocks: int(depth[b]), GPUBlocks: int(depth[b] - cpuOnly[b])})
	}
	return dst
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
