package scheduler

import (
	"sync"
	"time"
)

// History remembers which replica the router sent which prompt blocks to,
// for ttl. It backs the approximate prefix scorer (replicas without KV
// events) and the precise scorer's speculative credit (the blocks a replica
// is about to cache, before its events arrive). It is exported for plugins
// outside the package whose rule is "route where this prefix went before"
// (router/peerpolicy's SGLang and AIBrix policies): they record in Routed
// and match in Score, as the approx-prefix scorer does, with the same
// memory bound. It is safe for concurrent use.
//
// Memory is capped by keeping two generations: records go into cur; when cur
// holds half of maxPairs (key, replica) pairs it becomes prev and the old
// prev is dropped. Recently used blocks are re-recorded and so survive, like
// an LRU at a fraction of the bookkeeping.
//
// Each (key, replica) pair is one packed uint64 (replica number, time in
// milliseconds and, for the prefix scorer's speculative credit, the
// data-parallel rank the prompt was pinned to); the first replica of a key is stored inline in a map of
// uint64s, further ones in a side map, so the common case costs one small
// map entry.
type History struct {
	ttl      time.Duration
	maxPairs int
	now      func() time.Time
	epoch    time.Time // times are stored as milliseconds since epoch

	mu        sync.RWMutex
	ids       map[string]uint64 // interned replica ids
	names     []string
	cur, prev generation
}

type generation struct {
	one   map[uint64]uint64   // key -> first pair
	more  map[uint64][]uint64 // key -> further pairs
	pairs int
}

func newGeneration(hint int) generation {
	return generation{one: make(map[uint64]uint64, hint), more: map[uint64][]uint64{}}
}

const (
	timeBits = 40 // 2^40 ms is about 35 years
	timeMask = 1<<timeBits - 1
	idBits   = 16 // maxNames ids
	idMask   = 1<<idBits - 1
	rankBits = timeBits + idBits
	// maxRank is the highest data-parallel rank a pair records; a pair
	// stores rank+1 in its top 8 bits, 0 for none.
	maxRank = 1<<(64-rankBits) - 2
	// maxNames bounds the interned replica ids; past it the history starts
	// afresh (replica ids change only with new allocations).
	maxNames = 1 << 16
)

func pack(id, ms uint64) uint64  { return id<<timeBits | ms&timeMask }
func unpackID(p uint64) uint64   { return p >> timeBits & idMask }
func unpackTime(p uint64) uint64 { return p & timeMask }

// packRank adds rank to pair p; a rank outside [0, maxRank] records none.
func packRank(p uint64, rank int) uint64 {
	if rank < 0 || rank > maxRank {
		return p
	}
	return p | uint64(rank+1)<<rankBits
}

// unpackRank is p's rank, -1 for none.
func unpackRank(p uint64) int { return int(p>>rankBits) - 1 }

// NewHistory returns an empty history that forgets a record after ttl (0
// keeps nothing) and holds at most about maxPairs (key, replica) pairs;
// now is the clock (Deps.Now).
func NewHistory(ttl time.Duration, maxPairs int, now func() time.Time) *History {
	h := &History{ttl: ttl, maxPairs: max(maxPairs, 2), now: now, epoch: now()}
	h.reset()
	return h
}

func (h *History) reset() {
	h.ids, h.names = map[string]uint64{}, nil
	h.cur, h.prev = newGeneration(0), newGeneration(0)
}

// ms is t as milliseconds since the epoch (0 before it).
func (h *History) ms(t time.Time) uint64 {
	d := t.Sub(h.epoch)
	if d < 0 {
		return 0
	}
	return uint64(d / time.Millisecond)
}

// Record notes that keys were sent to replica now. Keys are recorded a
// whole prompt at a time (Request.HistoryKeys), which is what Match's
// stride relies on.
func (h *History) Record(keys []uint64, replica string) {
	h.recordRank(keys, replica, -1)
}

// recordRank is Record noting that the prompt was pinned to replica's
// data-parallel rank (-1: none), so that matchRanks can name the rank a
// speculatively credited prefix went to.
func (h *History) recordRank(keys []uint64, replica string, rank int) {
	if h.ttl <= 0 || len(keys) == 0 {
		return
	}
	at := h.ms(h.now())
	h.mu.Lock()
	defer h.mu.Unlock()
	id, ok := h.ids[replica]
	if !ok {
		if len(h.names) >= maxNames {
			h.reset()
		}
		id = uint64(len(h.names))
		h.ids[replica] = id
		h.names = append(h.names, replica)
	}
	p := packRank(pack(id, at), rank)
	for _, k := range keys {
		g := &h.cur
		first, ok := g.one[k]
		switch {
		case !ok:
			g.one[k] = p
		case unpackID(first) == id:
			g.one[k] = p
			continue
		default:
			list := g.more[k]
			found := false
			for i := range list {
				if unpackID(list[i]) == id {
					list[i], found = p, true
					break
				}
			}
			if found {
				continue
			}
			g.more[k] = append(list, p)
		}
		g.pairs++
		if g.pairs >= h.maxPairs/2 {
			h.prev, h.cur = h.cur, newGeneration(len(h.cur.one))
		}
	}
}

// matchStride is how many keys match steps at a time. Keys are recorded a
// whole prompt at a time, and a chained key stands for its whole prefix,
// so what a replica was sent is prefix-closed, with times that only fall
// along a chain: a replica that holds a probed key holds the keys before
// it. Match therefore reads one key in matchStride, and every key only in
// the stretch where a replica drops out, with the result of reading them
// all. (A generation dropped in the middle of a chain can leave a hole;
// then the replica may be credited past it, as index.LookupStride would.)
const matchStride = 16

// Match calls fn with, for every replica that was sent keys[0] within ttl,
// the number of leading keys it was sent (the walk stops once no replica
// remains). fn runs after the history's lock is released, so it may call
// Record.
func (h *History) Match(keys []uint64, fn func(replica string, depth int)) {
	h.matchRanks(keys, func(replica string, depth, _ int) { fn(replica, depth) })
}

// matchRanks is Match also passing the data-parallel rank recorded with
// the replica's deepest matched key (recordRank), -1 for none: the rank
// of the latest prompt sent there that shares the whole matched prefix.
func (h *History) matchRanks(keys []uint64, fn func(replica string, depth, rank int)) {
	if h.ttl <= 0 || len(keys) == 0 {
		return
	}
	cutoff := h.ms(h.now().Add(-h.ttl))
	type run struct {
		id    uint64
		depth int
		alive bool
		rank  int
	}
	var runs []run
	h.mu.RLock()
	for _, g := range []*generation{&h.cur, &h.prev} {
		g.each(keys[0], func(p uint64) {
			if unpackTime(p) < cutoff {
				return
			}
			for _, r := range runs {
				if r.id == unpackID(p) {
					return
				}
			}
			runs = append(runs, run{unpackID(p), 0, true, -1})
		})
	}
	held := func(k, id uint64) bool { return h.cur.has(k, id, cutoff) || h.prev.has(k, id, cutoff) }
	alive := len(runs)
	for pos := 1; pos < len(keys) && alive > 0; {
		end := min(pos+matchStride, len(keys)) // probe keys[end-1]
		for j := range runs {
			r := &runs[j]
			if !r.alive || held(keys[end-1], r.id) {
				continue
			}
			d := pos // r drops out within keys[pos:end]: find where
			for d < end-1 && held(keys[d], r.id) {
				d++
			}
			r.alive, r.depth = false, d
			alive--
		}
		pos = end
	}
	names := make([]string, len(runs))
	for j := range runs {
		r := &runs[j]
		names[j] = h.names[r.id]
		if r.alive {
			r.depth = len(keys)
		}
		r.rank = h.rankAt(keys[r.depth-1], r.id)
	}
	h.mu.RUnlock()
	for j, r := range runs {
		fn(names[j], r.depth, r.rank)
	}
}

// rankAt is the rank recorded with replica id's pair for key k, the
// current generation's first, -1 for none. The caller holds h.mu.
func (h *History) rankAt(k, id uint64) int {
	for _, g := range []*generation{&h.cur, &h.prev} {
		if p, ok := g.pair(k, id); ok {
			return unpackRank(p)
		}
	}
	return -1
}

func (g *generation) each(k uint64, fn func(p uint64)) {
	if p, ok := g.one[k]; ok {
		fn(p)
		for _, p := range g.more[k] {
			fn(p)
		}
	}
}

func (g *generation) has(k, id, cutoff uint64) bool {
	p, ok := g.pair(k, id)
	return ok && unpackTime(p) >= cutoff
}

// pair is replica id's pair for key k, if g holds one.
func (g *generation) pair(k, id uint64) (uint64, bool) {
	p, ok := g.one[k]
	if !ok {
		return 0, false
	}
	if unpackID(p) == id {
		return p, true
	}
	for _, p := range g.more[k] {
		if unpackID(p) == id {
			return p, true
		}
	}
	return 0, false
}

// size is the number of (key, replica) pairs held, for tests and metrics.
func (h *History) size() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.cur.pairs + h.prev.pairs
}
