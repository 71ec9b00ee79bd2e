package route

import (
	"sync"
	"sync/atomic"
)

// rankBalancer chooses the data-parallel rank for a prompt no rank of its
// replica holds any of, as vLLM's DP balancer would from what the router
// knows. vLLM (core_client.py, DPLBAsyncMPClient.get_core_engine_for_request)
// sends an unpinned request to the rank with the lowest load score,
// scanning from a start that moves on by one after each choice so that
// equals take turns; the router's score is its own requests in flight on
// each rank (it sees no rank's queue), so a replica's cold prompts go to
// its least busy rank and, among equally busy ones, in turn. Choosing the
// rank itself, rather than leaving it to the engine, lets the prefix
// scorer's speculative credit name it, so a sibling sent before the first
// prompt's KV events arrive is pinned to the rank about to cache their
// prefix.
type rankBalancer struct {
	mu       sync.RWMutex
	replicas map[string]*rankLoad
}

// rankLoad is one replica's ranks: choices made and requests in flight.
type rankLoad struct {
	next     atomic.Uint64
	inflight []atomic.Int64 // by rank
}

// maxBalanced bounds the replicas a balancer remembers; past it, it
// starts afresh (replica ids change only with new allocations). Requests
// in flight on a forgotten replica end on its old counts.
const maxBalanced = 1 << 12

// of returns replica's counts for size ranks (size > 1), new ones when
// the replica is new or its size changed.
func (b *rankBalancer) of(replica string, size int) *rankLoad {
	b.mu.RLock()
	l := b.replicas[replica]
	b.mu.RUnlock()
	if l != nil && len(l.inflight) == size {
		return l
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if l = b.replicas[replica]; l != nil && len(l.inflight) == size {
		return l
	}
	if b.replicas == nil || len(b.replicas) >= maxBalanced {
		b.replicas = map[string]*rankLoad{}
	}
	l = &rankLoad{inflight: make([]atomic.Int64, size)}
	b.replicas[replica] = l
	return l
}

// choose returns the rank with the fewest of the router's requests in
// flight, scanning from the replica's next start; the start moves on by
// one each time.
func (l *rankLoad) choose() int {
	n := len(l.inflight)
	start := int((l.next.Add(1) - 1) % uint64(n))
	best, least := start, l.inflight[start].Load()
	for i := 1; i < n; i++ {
		r := (start + i) % n
		if c := l.inflight[r].Load(); c < least {
			best, least = r, c
		}
	}
	return best
}

// begin counts a request sent to rank, returning the count to end it on;
// nil when rank is not one of l's.
func (l *rankLoad) begin(rank int) *atomic.Int64 {
	if l == nil || rank < 0 || rank >= len(l.inflight) {
		return nil
	}
	c := &l.inflight[rank]
	c.Add(1)
	return c
}
