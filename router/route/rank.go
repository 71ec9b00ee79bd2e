package route

import (
	"sync"
	"sync/atomic"
)

// rankRotor chooses the data-parallel rank for a prompt no rank of its
// replica holds any of. vLLM's DP balancer (core_client.py,
// DPLBAsyncMPClient.get_core_engine_for_request) sends an unpinned
// request to the rank with the least load and, among equals, scans from a
// start that moves on by one after each choice; the router has no view
// of the ranks' queues, so it keeps that scan alone: a replica's cold
// prompts go to its ranks in turn. Choosing the rank itself, rather than
// leaving it to the engine, lets the prefix scorer's speculative credit
// name it, so a sibling sent before the first prompt's KV events arrive
// is pinned to the rank about to cache their prefix.
type rankRotor struct {
	mu   sync.RWMutex
	next map[string]*atomic.Uint64 // replica id -> choices made
}

// maxRotors bounds the replicas a rotor remembers; past it, it starts
// afresh (replica ids change only with new allocations).
const maxRotors = 1 << 12

// choose returns the next rank of replica's size ranks (size > 1).
func (r *rankRotor) choose(replica string, size int) int {
	r.mu.RLock()
	n := r.next[replica]
	r.mu.RUnlock()
	if n == nil {
		r.mu.Lock()
		if n = r.next[replica]; n == nil {
			if r.next == nil || len(r.next) >= maxRotors {
				r.next = map[string]*atomic.Uint64{}
			}
			n = new(atomic.Uint64)
			r.next[replica] = n
		}
		r.mu.Unlock()
	}
	return int((n.Add(1) - 1) % uint64(size))
}
