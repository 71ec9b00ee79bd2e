package kvgroups

import (
	"sync"
	"sync/atomic"

	"github.com/llmgw/llmgw/internal/kvwire"
)

// Registry holds the layout of every hybrid replica: from its events
// (which win) or declared ahead of them. Replicas with one full-attention
// group are not held, so a fleet of them leaves the registry empty and
// lookups on the fast path. Safe for concurrent use; Of takes no lock.
type Registry struct {
	mu       sync.Mutex
	events   map[string]*Layout
	declared map[string]*Layout
	cur      atomic.Pointer[map[string]*Layout] // hybrid layouts in effect, replaced whole
	// offload holds, per replica whose offloaded (CPU) tier keeps blocks
	// larger than its GPU blocks, how many GPU blocks one covers; replaced
	// whole, so lookups read it without a lock.
	offload atomic.Pointer[map[string]int]
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	r := &Registry{events: map[string]*Layout{}, declared: map[string]*Layout{}}
	r.publishLocked()
	r.offload.Store(&map[string]int{})
	return r
}

// SetOffload records the block sizes of replica's GPU and offloaded (CPU)
// tiers as its engine's events report them. An offloaded block of a
// multiple f > 1 of the GPU block covers f GPU blocks, and vLLM's
// offloading connector loads whole ones only (wholeOffloaded); any other
// pair (unknown, equal, not a multiple) forgets the factor.
func (r *Registry) SetOffload(replica string, blockSize, offloadSize int) {
	f := 0
	if blockSize > 0 && offloadSize > blockSize && offloadSize%blockSize == 0 {
		f = offloadSize / blockSize
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := *r.offload.Load()
	if cur[replica] == f {
		return
	}
	m := make(map[string]int, len(cur)+1)
	for id, v := range cur {
		m[id] = v
	}
	if f == 0 {
		delete(m, replica)
	} else {
		m[replica] = f
	}
	r.offload.Store(&m)
}

// OffloadFactor is how many GPU blocks one of replica's offloaded blocks
// covers when that is more than one, else 0.
func (r *Registry) OffloadFactor(replica string) int {
	m := *r.offload.Load()
	if len(m) == 0 {
		return 0
	}
	return m[replica]
}

// AnyOffload reports whether any replica offloads in blocks larger than
// its GPU blocks: false is the fast path.
func (r *Registry) AnyOffload() bool { return len(*r.offload.Load()) > 0 }

// Of returns replica's layout; nil means one full-attention group.
func (r *Registry) Of(replica string) *Layout {
	m := *r.cur.Load()
	if len(m) == 0 {
		return nil
	}
	return m[replica]
}

// Any reports whether any replica is hybrid: false is the fast path.
func (r *Registry) Any() bool { return len(*r.cur.Load()) > 0 }

// FromEvents records the layout replica's events declared (a kvwire
// Replica.Layout, non-nil) with blockSize as the block size of groups
// that name none. It reports the layout in effect.
func (r *Registry) FromEvents(replica string, groups []kvwire.KVGroupSpec, blockSize int) *Layout {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.events[replica]; l != nil && sameGroups(l.Groups, groups, blockSize) {
		return l
	}
	l := NewLayout(groups, blockSize)
	r.events[replica] = l
	r.publishLocked()
	return l
}

// EventsLayout is the layout replica's events declared, nil when none.
func (r *Registry) EventsLayout(replica string) *Layout {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[replica]
}

// Declare records a layout declared ahead of replica's events (Consul
// meta); nil forgets it.
func (r *Registry) Declare(replica string, l *Layout) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l == nil {
		delete(r.declared, replica)
	} else {
		r.declared[replica] = l
	}
	r.publishLocked()
}

// Forget drops what the events said of replica (it left, or its driver's
// state was dropped), its offloaded block size included; a declared
// layout stays until Declare(nil).
func (r *Registry) Forget(replica string) {
	r.SetOffload(replica, 0, 0)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.events[replica]; ok {
		delete(r.events, replica)
		r.publishLocked()
	}
}

func (r *Registry) publishLocked() {
	m := map[string]*Layout{}
	for id, l := range r.declared {
		if l.Hybrid() {
			m[id] = l
		}
	}
	for id, l := range r.events {
		if l.Hybrid() {
			m[id] = l
		} else {
			delete(m, id) // the events say full attention only
		}
	}
	r.cur.Store(&m)
}

func sameGroups(a, b []kvwire.KVGroupSpec, blockSize int) bool {
	if len(a) != len(b) {
		return false
	}
	n := NewLayout(b, blockSize)
	for i := range a {
		if a[i] != n.Groups[i] {
			return false
		}
	}
	return true
}
