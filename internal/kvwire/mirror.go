package kvwire

import "sync"

// BlockRef is one cached block as the wire names it.
type BlockRef struct {
	Rank  int
	Tier  Tier
	Key   uint64
	Group int // KV-cache group (Group.KVGroup)
}

// Mirror is the simplest Sink: it keeps, per driver and replica, the set of
// blocks the updates say are held. The router's index keeps richer state;
// Mirror serves tests on both sides and debugging. Safe for concurrent use.
type Mirror struct {
	mu      sync.Mutex
	drivers map[string]map[string]map[BlockRef]struct{}
	sizes   map[string]int
}

// NewMirror returns an empty Mirror.
func NewMirror() *Mirror {
	return &Mirror{drivers: map[string]map[string]map[BlockRef]struct{}{}, sizes: map[string]int{}}
}

// ApplyUpdate applies u as the protocol defines.
func (m *Mirror) ApplyUpdate(u *Update) {
	m.mu.Lock()
	defer m.mu.Unlock()
	reps := m.drivers[u.Driver]
	if reps == nil || u.Snapshot {
		reps = map[string]map[BlockRef]struct{}{}
		m.drivers[u.Driver] = reps
	}
	for _, r := range u.Replicas {
		set := reps[r.ID]
		if set == nil || r.Reset {
			set = map[BlockRef]struct{}{}
			reps[r.ID] = set
		}
		if r.BlockSize > 0 {
			m.sizes[r.ID] = r.BlockSize
		}
		for _, g := range r.Groups {
			for _, k := range g.Del {
				delete(set, BlockRef{Rank: g.Rank, Tier: g.Tier, Key: k, Group: g.KVGroup})
			}
			for _, k := range g.Add {
				set[BlockRef{Rank: g.Rank, Tier: g.Tier, Key: k, Group: g.KVGroup}] = struct{}{}
			}
		}
		if len(set) == 0 {
			delete(reps, r.ID)
		}
	}
}

// Blocks returns the blocks driver reports for replica, in no order.
func (m *Mirror) Blocks(driver, replica string) []BlockRef {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := m.drivers[driver][replica]
	out := make([]BlockRef, 0, len(set))
	for b := range set {
		out = append(out, b)
	}
	return out
}

// Replicas returns the replicas driver reports as holding blocks.
func (m *Mirror) Replicas(driver string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id := range m.drivers[driver] {
		out = append(out, id)
	}
	return out
}

// BlockSize returns the last block size reported for replica (0 if none).
func (m *Mirror) BlockSize(replica string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sizes[replica]
}
