package scheduler

import (
	"sync"
	"time"
)

// history remembers which replica the router sent which prompt blocks to,
// for ttl. It backs the approximate prefix scorer (replicas without KV
// events) and the precise scorer's speculative credit (the blocks a replica
// is about to cache, before its events arrive).
//
// Memory is capped by keeping two generations: records go into cur; when cur
// holds half of maxPairs (key, replica) pairs it becomes prev and the old
// prev is dropped. Recently used blocks are re-recorded and so survive, like
// an LRU at a fraction of the bookkeeping.
type history struct {
	ttl      time.Duration
	maxPairs int
	now      func() time.Time

	mu        sync.RWMutex
	cur, prev map[uint64][]seen
	curPairs  int
}

type seen struct {
	replica string
	at      int64 // unix nanoseconds
}

func newHistory(ttl time.Duration, maxPairs int, now func() time.Time) *history {
	return &history{
		ttl:      ttl,
		maxPairs: max(maxPairs, 2),
		now:      now,
		cur:      map[uint64][]seen{},
		prev:     map[uint64][]seen{},
	}
}

// record notes that keys were sent to replica now.
func (h *history) record(keys []uint64, replica string) {
	if h.ttl <= 0 || len(keys) == 0 {
		return
	}
	at := h.now().UnixNano()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range keys {
		list := h.cur[k]
		found := false
		for i := range list {
			if list[i].replica == replica {
				list[i].at = at
				found = true
				break
			}
		}
		if found {
			continue
		}
		h.cur[k] = append(list, seen{replica, at})
		h.curPairs++
		if h.curPairs >= h.maxPairs/2 {
			h.prev, h.cur, h.curPairs = h.cur, make(map[uint64][]seen, len(h.cur)), 0
		}
	}
}

// match calls fn with, for every replica that was sent keys[0] within ttl,
// the number of leading keys it was sent (the walk stops once no replica
// remains).
func (h *history) match(keys []uint64, fn func(replica string, depth int)) {
	if h.ttl <= 0 || len(keys) == 0 {
		return
	}
	cutoff := h.now().Add(-h.ttl).UnixNano()
	type run struct {
		replica string
		depth   int
		alive   bool
	}
	var runs []run
	h.mu.RLock()
	for _, s := range h.cur[keys[0]] {
		if s.at >= cutoff {
			runs = append(runs, run{s.replica, 0, true})
		}
	}
	for _, s := range h.prev[keys[0]] {
		if s.at >= cutoff && !h.has(h.cur[keys[0]], s.replica, cutoff) {
			runs = append(runs, run{s.replica, 0, true})
		}
	}
	alive := len(runs)
	for i := 1; i < len(keys) && alive > 0; i++ {
		cur, prev := h.cur[keys[i]], h.prev[keys[i]]
		for j := range runs {
			r := &runs[j]
			if r.alive && !h.has(cur, r.replica, cutoff) && !h.has(prev, r.replica, cutoff) {
				r.alive, r.depth = false, i
				alive--
			}
		}
	}
	h.mu.RUnlock()
	for _, r := range runs {
		if r.alive {
			r.depth = len(keys)
		}
		fn(r.replica, r.depth)
	}
}

func (h *history) has(list []seen, replica string, cutoff int64) bool {
	for _, s := range list {
		if s.replica == replica && s.at >= cutoff {
			return true
		}
	}
	return false
}

// size is the number of (key, replica) pairs held, for tests and metrics.
func (h *history) size() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for _, m := range []map[uint64][]seen{h.cur, h.prev} {
		for _, l := range m {
			n += len(l)
		}
	}
	return n
}
