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
	// GPURun is the number of leading prompt blocks the rank holds on the
	// GPU, before the first one held only on CPU: the engine's GPU prefix
	// hit. It equals GPUBlocks unless the GPU copies have a hole.
	GPURun int
}

// Lookup walks keys (a prompt's block keys, in order) and appends to dst one
// Match per replica that holds at least the first block, with its best rank
// (longest match, then most GPU blocks). The walk stops at the first key no
// remaining holder has. Replicas are appended in the order of their lowest
// slot.
func (ix *Index) Lookup(keys []uint64, dst []Match) []Match {
	return ix.LookupStride(keys, 1, dst)
}

// LookupStride is Lookup for long prompts: with stride > 1 it probes every
// stride-th key and reads the keys in between only where a holder drops
// out or its blocks move from GPU to CPU memory. It assumes each holder's
// blocks of one chain form a prefix, GPU blocks first (vLLM frees and
// evicts a chain from its tail, and offloads the evicted part), so a holder
// that has a probed key is taken to have the keys before it. Under that
// assumption the result equals Lookup's; a holder with a hole in its chain
// may be credited past the hole. With stride <= 1 the walk is exact.
func (ix *Index) LookupStride(keys []uint64, stride int, dst []Match) []Match {
	tab := ix.acquire()
	if !tab.onePage() {
		defer release(tab)
		return ix.lookupPaged(tab, keys, dst)
	}
	var w walk
	best, ok := ix.walkKeys(tab, keys, stride, &w)
	if !ok {
		return dst
	}
	for live := tab.live[0]; live != 0; live &= live - 1 {
		s := bits.TrailingZeros64(live)
		if tab.group[s] == int32(s) && best[s] >= 0 {
			dst = append(dst, w.match(tab, best[s]))
		}
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
	if !tab.onePage() {
		defer release(tab)
		return ix.lookupReplicasPaged(tab, keys, replicas, out)
	}
	var w walk
	best, ok := ix.walkKeys(tab, keys, stride, &w)
	if !ok {
		return out
	}
	groups, buf := ix.groups.groups(tab, replicas)
	for i, g := range groups {
		if g >= 0 && best[g] >= 0 {
			out[i] = w.match(tab, best[g])
		}
	}
	if buf != nil {
		groupBufs.Put(buf)
	}
	return out
}

// walkKeys runs w over keys for a one-page table it has acquired, releases
// it, and returns each replica group's best slot (walk.best); false when
// nothing was walked. The table is released once the walk is done: what
// is read of it afterwards (holders, groups) never changes, only slot
// reuse must wait for readers.
func (ix *Index) walkKeys(tab *table, keys []uint64, stride int, w *walk) ([64]int8, bool) {
	defer release(tab)
	if !w.run(ix, tab, keys, stride) {
		return [64]int8{}, false
	}
	return w.best(tab), true
}

// run walks keys for the holders live in tab; false when there is nothing
// to walk. w is a fresh (zero) walk: its arrays are not cleared again,
// which a lookup would pay for on every decision.
func (w *walk) run(ix *Index, tab *table, keys []uint64, stride int) bool {
	w.ix, w.keys, w.active, w.onGPU = ix, keys, tab.live[0], tab.live[0]
	if w.active == 0 || len(keys) == 0 {
		return false
	}
	if stride <= 1 {
		w.scan(0, len(keys))
	} else {
		for pos := 0; pos < len(keys) && w.active != 0; {
			end := min(pos+stride, len(keys)) // probe keys[end-1]
			e := ix.shard(keys[end-1]).get(keys[end-1])
			cpuOnly := e.cpu &^ e.gpu & w.active
			if (e.gpu|e.cpu)&w.active == w.active && cpuOnly&w.onGPU == 0 {
				for c := cpuOnly; c != 0; c &= c - 1 {
					w.cpuOnly[bits.TrailingZeros64(c)] += int32(end - pos)
				}
			} else {
				w.scan(pos, end)
			}
			pos = end
		}
	}
	for a := w.active; a != 0; a &= a - 1 {
		w.depth[bits.TrailingZeros64(a)] = int32(len(keys))
	}
	return true
}

// walk is the state of one Lookup over a one-page table (at most 64 live
// holders, all in page 0).
type walk struct {
	ix             *Index
	keys           []uint64
	active         uint64 // holders that held every key so far
	onGPU          uint64 // holders whose last key read was on the GPU
	depth, cpuOnly [64]int32
	// gpuEnd is, for a holder with CPU-only blocks, the position of its
	// first: where its GPU prefix ends.
	gpuEnd [64]int32
	sink   uint64
}

// scan reads keys[from:to] one by one, retiring holders at their first
// missing key. It keeps the walk's state in locals (registers) while it
// runs: it is the hot loop of every routing decision.
//
// The slots a walk reads are scattered over the whole table, so nearly
// every read misses the cache. scan therefore touches the keys a group at
// a time, a group ahead of the keys it reads: a loop of nothing but
// independent loads keeps a group's misses in flight together, where a
// touch inside the reading loop would wait behind the reads.
func (w *walk) scan(from, to int) {
	keys := w.keys[:to]
	ix := w.ix
	active, onGPU := w.active, w.onGPU
	sink := ix.touchKeys(keys[from:min(from+readGroup, to)])
	for g := from; g < to; g += readGroup {
		sink += ix.touchKeys(keys[min(g+readGroup, to):min(g+2*readGroup, to)])
		for i := g; i < min(g+readGroup, to); i++ {
			e := ix.shard(keys[i]).get(keys[i])
			held := (e.gpu | e.cpu) & active
			for gone := active &^ held; gone != 0; gone &= gone - 1 {
				w.depth[bits.TrailingZeros64(gone)] = int32(i)
			}
			active, onGPU = held, e.gpu&held
			if held == 0 {
				w.active, w.onGPU, w.sink = active, onGPU, w.sink+sink
				return
			}
			for c := e.cpu &^ e.gpu & held; c != 0; c &= c - 1 {
				s := bits.TrailingZeros64(c)
				if w.cpuOnly[s] == 0 {
					w.gpuEnd[s] = int32(i)
				}
				w.cpuOnly[s]++
			}
		}
	}
	w.active, w.onGPU, w.sink = active, onGPU, w.sink+sink
}

// best returns, per replica group (its lowest live slot), the slot of its
// best rank, or -1 where no rank holds the first key.
func (w *walk) best(tab *table) [64]int8 {
	var best [64]int8
	for i := range best {
		best[i] = -1
	}
	depth, cpuOnly := &w.depth, &w.cpuOnly
	for live := tab.live[0]; live != 0; live &= live - 1 {
		s := bits.TrailingZeros64(live)
		if depth[s] == 0 {
			continue
		}
		g := tab.group[s]
		if b := best[g]; b < 0 || better(depth[s], depth[s]-cpuOnly[s], tab.holders.at(s).rank,
			depth[b], depth[b]-cpuOnly[b], tab.holders.at(int(b)).rank) {
			best[g] = int8(s)
		}
	}
	return best
}

// match is the Match of slot s.
func (w *walk) match(tab *table, s int8) Match {
	h := tab.holders.at(int(s))
	return Match{Replica: h.replica, Rank: h.rank, Blocks: int(w.depth[s]), GPUBlocks: int(w.depth[s] - w.cpuOnly[s]),
		GPURun: int(gpuRun(w.depth[s], w.cpuOnly[s], w.gpuEnd[s]))}
}

// gpuRun is the GPU prefix of a holder that held depth keys, cpuOnly of
// them only on CPU, the first of those at gpuEnd.
func gpuRun(depth, cpuOnly, gpuEnd int32) int32 {
	if cpuOnly == 0 {
		return depth
	}
	return min(gpuEnd, depth)
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
