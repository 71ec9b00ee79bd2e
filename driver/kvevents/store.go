package kvevents

import (
	"sort"
	"sync"

	"maps"
	"slices"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
)

// Store holds the block state of every replica this driver runs and the
// change log its sessions drain. Intake (Apply, ClearRank, Remove) only
// appends to the log; each Session reads the log at its own pace, and a
// session that falls more than the log limit behind is cut loose and given
// a snapshot on its next drain, so no session can slow intake or another
// session down. Store is safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	replicas map[string]*replicaState
	log      changeLog
	sessions map[*Session]struct{}
	maxLag   int // changes a session may fall behind before resync
	stats    ApplyStats
}

// replicaState is one replica: the states of its ranks' KV-cache groups,
// the engine block size of its primary group and the groups' layout as
// its events declared it.
type replicaState struct {
	id        string
	blockSize int
	// offloadSize is the block size of its primary group's offloaded (CPU)
	// stores, as the engine sends them (0 before any).
	offloadSize int
	ranks       map[rankGroup]*rankState
	layout      layout
	// gaps are the key-deciding fields its engine's events lack: when any,
	// its keys are withheld from sessions and it is sent untrusted.
	gaps Gap
}

// rankGroup names the state of one KV-cache group of one rank.
type rankGroup struct{ rank, group int }

// op is what a change did.
type op uint8

const (
	opAdd op = iota + 1
	opDel
	opReset // the replica was removed: it holds nothing
)

// change is one effective transition in the block state.
type change struct {
	rep   *replicaState
	key   blockkey.Key
	rank  uint16
	group uint8 // KV-cache group
	tier  kvwire.Tier
	op    op
}

// DefaultMaxLag is how many changes a session may fall behind before it is
// resynchronised by snapshot: about 24 MiB of log.
const DefaultMaxLag = 1 << 20

// StoreOption configures a Store.
type StoreOption func(*Store)

// WithMaxLag sets how many changes a session may fall behind before its log
// position is dropped and its next drain becomes a snapshot.
func WithMaxLag(n int) StoreOption {
	return func(s *Store) {
		if n > 0 {
			s.maxLag = n
		}
	}
}

// NewStore returns an empty store.
func NewStore(opts ...StoreOption) *Store {
	s := &Store{
		replicas: make(map[string]*replicaState),
		sessions: make(map[*Session]struct{}),
		maxLag:   DefaultMaxLag,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// replica returns the state of id, creating it. Callers hold s.mu.
func (s *Store) replica(id string) *replicaState {
	r, ok := s.replicas[id]
	if !ok {
		r = &replicaState{id: id, ranks: make(map[rankGroup]*rankState)}
		s.replicas[id] = r
	}
	return r
}

func (s *Store) rankOf(r *replicaState, rank, group int) *rankState {
	rs, ok := r.ranks[rankGroup{rank, group}]
	if !ok {
		rs = newRankState(rank, func(rank int, t kvwire.Tier, k blockkey.Key, add bool) {
			if len(s.sessions) == 0 || r.gaps != 0 {
				return // nobody to tell, or keys that may be wrong
			}
			o := opDel
			if add {
				o = opAdd
			}
			s.log.append(change{rep: r, key: k, rank: uint16(rank), group: uint8(group), tier: t, op: o})
		})
		rs.sibling = func(h uint64) (engineEntry, bool) {
			for rg, o := range r.ranks {
				if rg.rank == rank && rg.group != group {
					if e, ok := o.engine[h]; ok && e.resolved {
						return e, true
					}
				}
			}
			return engineEntry{}, false
		}
		r.ranks[rankGroup{rank, group}] = rs
	}
	return rs
}

// Apply applies one decoded batch from data-parallel rank rank of replica.
func (s *Store) Apply(replica string, rank int, b *Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replica(replica)
	var st ApplyStats
	for i := range b.Events {
		ev := &b.Events[i]
		if ev.Type == BlockStored && len(ev.Tokens) > 0 {
			r.learn(ev)
		} else if ev.Type == BlockStored {
			r.learnOffload(ev)
		}
		if ev.Gaps&^r.gaps != 0 {
			s.distrustLocked(r, ev.Gaps)
		}
		if ev.Type == AllBlocksCleared {
			st.Cleared++
			r.clearRank(rank)
			continue
		}
		s.rankOf(r, rank, ev.GroupIdx).apply(ev, &st)
	}
	s.stats.add(st)
	s.trimLocked()
}

// distrustLocked adds gaps to r's and tells sessions it holds nothing
// they may use: what it published before may have been
// keyed wrong too (a salted block looks like a plain one), and a reset with
// the reason (Untrusted) routes it approx.
func (s *Store) distrustLocked(r *replicaState, gaps Gap) {
	if r.gaps == 0 {
		s.stats.Untrusted++
	}
	r.gaps |= gaps
	if len(s.sessions) > 0 { // a reset also carries a new reason out
		s.log.append(change{rep: r, op: opReset})
	}
}

// Untrusted says why replica's keys cannot be trusted: its engine's event
// schema lacks a field some keys depend on (Gap). Empty when they can.
func (s *Store) Untrusted(replica string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.replicas[replica]; ok {
		return r.gaps.Reason()
	}
	return ""
}

// ClearRank drops every block of one rank of replica: the engine behind it
// restarted, or its history was lost.
func (s *Store) ClearRank(replica string, rank int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.replicas[replica]; ok {
		r.clearRank(rank)
	}
}

// Announce makes replica known, holding nothing: a new engine publishes
// for it. Snapshots list it from now on, and every session is sent it as a
// reset, so routers route it exact at once instead of waiting for its first
// event; an idle engine may send none for a long time, and what a router
// knows for certain about it, that it holds nothing, is worth using. A new
// engine may speak another event schema, so the replica is trusted until
// its events show a gap again.
func (s *Store) Announce(replica string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replica(replica)
	r.gaps = 0
	if len(s.sessions) > 0 {
		s.log.append(change{rep: r, op: opReset})
	}
}

// AnnounceIfUnknown announces replica as Announce does, unless the store
// holds state for it already (Announce would tell sessions it holds
// nothing), and reports whether it did. A plugin restarted beside a
// running engine learns of its replica from the engine's replay; when the
// replay has nothing, this tells routers the replica holds nothing rather
// than leaving them to guess until its first event.
func (s *Store) AnnounceIfUnknown(replica string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.replicas[replica]; ok {
		return false
	}
	r := s.replica(replica)
	if len(s.sessions) > 0 {
		s.log.append(change{rep: r, op: opReset})
	}
	return true
}

// Remove forgets replica: every session is told it holds nothing.
func (s *Store) Remove(replica string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.replicas[replica]
	if !ok {
		r = &replicaState{id: replica}
	}
	delete(s.replicas, replica)
	if len(s.sessions) > 0 {
		s.log.append(change{rep: r, op: opReset})
	}
}

// Stats returns what intake has applied so far.
func (s *Store) Stats() ApplyStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Block is one cached block of a replica, as the store holds it.
type Block struct {
	Rank  int
	Tier  kvwire.Tier
	Key   blockkey.Key
	Group int // KV-cache group
}

// Blocks returns the blocks replica holds, sorted by rank, tier, KV-cache group and key.
func (s *Store) Blocks(replica string) []Block {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Block
	if r, ok := s.replicas[replica]; ok {
		for rg, rs := range r.ranks {
			for k, h := range rs.held {
				for ti := range h {
					if h[ti] > 0 {
						out = append(out, Block{Rank: rg.rank, Tier: kvwire.Tier(ti + 1), Key: k, Group: rg.group})
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Rank != b.Rank {
			return a.Rank < b.Rank
		}
		if a.Tier != b.Tier {
			return a.Tier < b.Tier
		}
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.Key < b.Key
	})
	return out
}

// OffloadBlockSize is the block size of replica's offloaded (CPU) tier
// as its engine's events report it (0 before any offloaded store).
func (s *Store) OffloadBlockSize(replica string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.replicas[replica]; ok {
		return r.offloadSize
	}
	return 0
}

// BlockSize is the block size replica's engine reports in its events
// (its primary group's; 0 before any). It is the engine's own, which
// vLLM may have raised above the --block-size it was given.
func (s *Store) BlockSize(replica string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.replicas[replica]; ok {
		return r.blockSize
	}
	return 0
}

// Replicas returns the IDs of the replicas the store holds state for.
func (s *Store) Replicas() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := slices.Sorted(maps.Keys(s.replicas))
	return ids
}

// trimLocked drops log chunks every session has read, and cuts loose the
// sessions that lag more than maxLag changes behind.
func (s *Store) trimLocked() {
	end := s.log.end()
	low := end
	for ss := range s.sessions {
		if ss.resync {
			continue
		}
		if end-ss.cursor > uint64(s.maxLag) {
			ss.resync = true
			continue
		}
		low = min(low, ss.cursor)
	}
	s.log.trim(low)
}

// snapshotLocked builds the full state as replicas for a snapshot.
func (s *Store) snapshotLocked() []kvwire.Replica {
	out := make([]kvwire.Replica, 0, len(s.replicas))
	for _, r := range s.replicas {
		rep := kvwire.Replica{ID: r.id, BlockSize: r.blockSize, Layout: r.layout.specs(), Approx: r.gaps.Reason(), OffloadBlockSize: r.offloadSize}
		for rg, rs := range r.ranks {
			if r.gaps != 0 {
				break // its keys may be wrong: it is listed holding nothing
			}
			var add [2][]uint64
			for k, h := range rs.held {
				for ti := range h {
					if h[ti] > 0 {
						add[ti] = append(add[ti], uint64(k))
					}
				}
			}
			for ti := range add {
				if len(add[ti]) > 0 {
					rep.Groups = append(rep.Groups, kvwire.Group{Rank: rg.rank, Tier: kvwire.Tier(ti + 1), Add: add[ti], KVGroup: rg.group})
				}
			}
		}
		out = append(out, rep)
	}
	return out
}
