package kvevents

import (
	"slices"
	"sort"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
)

// Session is one consumer of the store's changes, typically one router
// instance. Its first Drain is a snapshot of every replica; each later Drain
// carries only the net effect of the changes since the previous one.
// A Session must be drained by one goroutine at a time.
type Session struct {
	store  *Store
	cursor uint64 // log position the next delta starts from
	resync bool   // next Drain is a snapshot
	closed bool
}

// Drained is the result of one Drain.
type Drained struct {
	Snapshot bool             // Replicas is the complete state
	Replicas []kvwire.Replica // sorted by ID
}

// Empty reports whether a delta carries no change.
func (d Drained) Empty() bool { return !d.Snapshot && len(d.Replicas) == 0 }

// Open starts a session whose first Drain is a snapshot.
func (s *Store) Open() *Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := &Session{store: s, resync: true}
	s.sessions[ss] = struct{}{}
	return ss
}

// Resync makes the next Drain a snapshot, e.g. because the router asked
// for one.
func (ss *Session) Resync() {
	s := ss.store
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.resync = true
	s.trimLocked()
}

// Close ends the session; the store stops keeping changes for it.
func (ss *Session) Close() {
	s := ss.store
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.closed = true
	delete(s.sessions, ss)
	s.trimLocked()
}

// Drain returns what changed since the previous Drain (or everything, as a
// snapshot, on the first call and after a resync). The store's lock is held
// only to copy out the log's chunk views; the net effect is computed
// without it.
func (ss *Session) Drain() Drained {
	s := ss.store
	s.mu.Lock()
	if ss.closed {
		s.mu.Unlock()
		return Drained{}
	}
	if ss.resync {
		reps := s.snapshotLocked()
		ss.cursor, ss.resync = s.log.end(), false
		s.trimLocked()
		s.mu.Unlock()
		sort.Slice(reps, func(i, j int) bool { return reps[i].ID < reps[j].ID })
		return Drained{Snapshot: true, Replicas: reps}
	}
	chunks := s.log.read(ss.cursor)
	ss.cursor = s.log.end()
	sizes := make(map[string]replicaMeta, len(s.replicas))
	for id, r := range s.replicas {
		sizes[id] = replicaMeta{blockSize: r.blockSize, offloadSize: r.offloadSize, layout: r.layout.specs(), approx: r.gaps.Reason()}
	}
	s.trimLocked()
	s.mu.Unlock()
	return Drained{Replicas: netEffect(chunks, sizes)}
}

type itemKey struct {
	key   blockkey.Key
	rank  uint16
	group uint8
	tier  kvwire.Tier
}

// replicaMeta is what a delta says of a replica besides its blocks.
type replicaMeta struct {
	blockSize   int
	offloadSize int
	layout      []kvwire.KVGroupSpec
	approx      string // why its keys are withheld (Store.Untrusted)
}

// flips records the first and last transition of one item in a window.
type flips struct{ first, last op }

type replicaNet struct {
	reset bool
	items map[itemKey]flips
}

// netEffect reduces a window of changes to what a receiver needs: for
// each item, its first and last transition decide. Transitions alternate
// (an add only when absent, a del only when present), so add...add is an
// add, del...del a del, and add...del or del...add nothing at all. A reset
// discards the replica's earlier changes and marks it Reset.
func netEffect(chunks [][]change, meta map[string]replicaMeta) []kvwire.Replica {
	reps := map[string]*replicaNet{}
	for _, chunk := range chunks {
		for i := range chunk {
			c := &chunk[i]
			rn := reps[c.rep.id]
			if rn == nil {
				rn = &replicaNet{items: map[itemKey]flips{}}
				reps[c.rep.id] = rn
			}
			if c.op == opReset {
				rn.reset = true
				clear(rn.items)
				continue
			}
			k := itemKey{key: c.key, rank: c.rank, group: c.group, tier: c.tier}
			f, seen := rn.items[k]
			if !seen {
				f.first = c.op
			}
			f.last = c.op
			rn.items[k] = f
		}
	}
	out := make([]kvwire.Replica, 0, len(reps))
	for id, rn := range reps {
		type gk struct {
			rank  int
			group int
			tier  kvwire.Tier
		}
		groups := map[gk]*kvwire.Group{}
		group := func(k itemKey) *kvwire.Group {
			id := gk{int(k.rank), int(k.group), k.tier}
			g := groups[id]
			if g == nil {
				g = &kvwire.Group{Rank: int(k.rank), Tier: k.tier, KVGroup: int(k.group)}
				groups[id] = g
			}
			return g
		}
		for k, f := range rn.items {
			switch {
			case f.last == opAdd && (f.first == opAdd || rn.reset):
				g := group(k)
				g.Add = append(g.Add, uint64(k.key))
			case f.last == opDel && f.first == opDel && !rn.reset:
				g := group(k)
				g.Del = append(g.Del, uint64(k.key))
			}
		}
		if !rn.reset && len(groups) == 0 {
			continue
		}
		m := meta[id]
		rep := kvwire.Replica{ID: id, BlockSize: m.blockSize, Reset: rn.reset, Layout: m.layout, Approx: m.approx, OffloadBlockSize: m.offloadSize}
		for _, g := range groups {
			rep.Groups = append(rep.Groups, *g)
		}
		slices.SortFunc(rep.Groups, func(a, b kvwire.Group) int {
			if a.Rank != b.Rank {
				return a.Rank - b.Rank
			}
			if a.Tier != b.Tier {
				return int(a.Tier) - int(b.Tier)
			}
			return a.KVGroup - b.KVGroup
		})
		out = append(out, rep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
