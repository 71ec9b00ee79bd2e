package kvevents

import (
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
)

// tierIndex maps a tier to its slot in per-tier counters.
func tierIndex(t kvwire.Tier) int { return int(t) - 1 }

func tierOf(m Medium) (kvwire.Tier, bool) {
	switch m {
	case MediumGPU:
		return kvwire.TierGPU, true
	case MediumCPU:
		return kvwire.TierCPU, true
	}
	return 0, false
}

// engineEntry is what a rank knows about one engine block hash: its
// canonical key (when its chain could be resolved) and how many stores
// minus removes the engine sent for it per tier. Duplicate stores and
// removes are legitimate (several physical copies, the offloading
// connector), so they are counted, not assumed away.
type engineEntry struct {
	key      blockkey.Key
	ref      [2]uint16 // per tier: GPU, CPU
	resolved bool      // false: parent chain unknown, key meaningless
}

// holders counts, per tier, the engine entries that hold a canonical key.
// Normally 0 or 1; more only if two engine hashes map to one key.
type holders [2]uint16

// rankState is the block state of one KV-cache group of one data-parallel
// rank of a replica. The groups of a hybrid model store blocks of the same
// engine hashes, and each removes its own, so each group counts its own
// references: a removal in one never ends another's residency.
type rankState struct {
	rank   int
	engine map[uint64]engineEntry   // engine hash -> entry
	held   map[blockkey.Key]holders // canonical key -> holders per tier
	emit   func(rank int, t kvwire.Tier, k blockkey.Key, add bool)
	// sibling finds an engine hash in the rank's other KV-cache groups:
	// a group that keeps only some blocks (Mamba states, a sliding window)
	// chains them on parents it never stored itself, and a hash names the
	// same tokens in every group. Nil for none.
	sibling func(h uint64) (engineEntry, bool)
}

func newRankState(rank int, emit func(int, kvwire.Tier, blockkey.Key, bool)) *rankState {
	return &rankState{
		rank:   rank,
		engine: make(map[uint64]engineEntry),
		held:   make(map[blockkey.Key]holders),
		emit:   emit,
	}
}

// ApplyStats counts what applying events did beyond the plain case.
type ApplyStats struct {
	Stored         uint64 // blocks stored
	Removed        uint64 // blocks removed
	Cleared        uint64 // AllBlocksCleared events
	Unresolved     uint64 // blocks stored whose parent chain is unknown: tracked, not published
	UnknownRemoves uint64 // removes of a hash (or tier) the state does not hold
	OtherMedia     uint64 // events for a medium that is not indexed
	Untrusted      uint64 // replicas found to send a schema with a Gap (their keys are withheld)
}

func (s *ApplyStats) add(o ApplyStats) {
	s.Stored += o.Stored
	s.Removed += o.Removed
	s.Cleared += o.Cleared
	s.Unresolved += o.Unresolved
	s.UnknownRemoves += o.UnknownRemoves
	s.OtherMedia += o.OtherMedia
	s.Untrusted += o.Untrusted
}

func (rs *rankState) hold(e engineEntry, ti int) {
	h := rs.held[e.key]
	if h[ti] == 0 {
		rs.emit(rs.rank, kvwire.Tier(ti+1), e.key, true)
	}
	h[ti]++
	rs.held[e.key] = h
}

func (rs *rankState) release(e engineEntry, ti int) {
	h, ok := rs.held[e.key]
	if !ok || h[ti] == 0 {
		return
	}
	h[ti]--
	if h[ti] == 0 {
		rs.emit(rs.rank, kvwire.Tier(ti+1), e.key, false)
	}
	if h == (holders{}) {
		delete(rs.held, e.key)
	} else {
		rs.held[e.key] = h
	}
}

// store applies a BlockStored event.
func (rs *rankState) store(ev *Event, st *ApplyStats) {
	tier, ok := tierOf(ev.Medium)
	if !ok {
		st.OtherMedia++
		return
	}
	ti := tierIndex(tier)
	if len(ev.Tokens) == 0 {
		// An offloaded copy: the blocks are known by engine hash only.
		for _, h := range ev.Hashes {
			e, known := rs.engine[h]
			if !known || !e.resolved {
				st.Unresolved++
			}
			rs.addRef(h, e, ti, st)
		}
		return
	}
	parent, resolved := blockkey.Root(ev.LoRAName), true
	if ev.HasParent {
		p, ok := rs.engine[ev.Parent]
		if (!ok || !p.resolved) && rs.sibling != nil {
			p, ok = rs.sibling(ev.Parent)
		}
		parent, resolved = p.key, ok && p.resolved
	}
	// A group that keeps only some blocks (Mamba's saved states, a sliding
	// window) skips its null blocks: the hashes name the kept blocks, the
	// tokens span the whole range, and the null ones lead it (vLLM's
	// cache_full_blocks; a null block is one whose position the group has
	// no state for). Chain through them to the first kept block.
	skip := len(ev.Tokens)/ev.BlockSize - len(ev.Hashes)
	for j := range skip {
		if !resolved {
			break
		}
		parent = blockkey.Chain(parent, ev.Tokens[j*ev.BlockSize:(j+1)*ev.BlockSize], nil)
	}
	for i, h := range ev.Hashes {
		var key blockkey.Key
		found := false
		if skip > 0 && rs.sibling != nil {
			// Where the kept blocks sit is the engine's to know: another
			// group's copy of the hash names its tokens exactly.
			var p engineEntry
			if p, found = rs.sibling(h); found {
				key, resolved = p.key, true
			}
		}
		switch {
		case found:
		case resolved:
			var extra blockkey.Extra
			if ev.Extra != nil {
				extra = ev.Extra[i]
			}
			j := skip + i
			key = blockkey.Chain(parent, ev.Tokens[j*ev.BlockSize:(j+1)*ev.BlockSize], extra)
		default:
			st.Unresolved++
		}
		e, known := rs.engine[h]
		if resolved && !e.resolved {
			if known {
				// Upgrade a block first seen without its chain: publish
				// what it already holds.
				e.key, e.resolved = key, true
				for t := range e.ref {
					if e.ref[t] > 0 {
						rs.hold(e, t)
					}
				}
			} else {
				e = engineEntry{key: key, resolved: true}
			}
		}
		rs.addRef(h, e, ti, st)
		parent = e.key
		resolved = e.resolved
	}
}

func (rs *rankState) addRef(h uint64, e engineEntry, ti int, st *ApplyStats) {
	st.Stored++
	if e.ref[ti] == 0 && e.resolved {
		rs.hold(e, ti)
	}
	if e.ref[ti] < ^uint16(0) {
		e.ref[ti]++
	}
	rs.engine[h] = e
}

// remove applies a BlockRemoved event.
func (rs *rankState) remove(ev *Event, st *ApplyStats) {
	tier, ok := tierOf(ev.Medium)
	if !ok {
		st.OtherMedia++
		return
	}
	ti := tierIndex(tier)
	for _, h := range ev.Hashes {
		e, known := rs.engine[h]
		if !known || e.ref[ti] == 0 {
			st.UnknownRemoves++
			continue
		}
		st.Removed++
		e.ref[ti]--
		if e.ref[ti] == 0 && e.resolved {
			rs.release(e, ti)
		}
		if e.ref == ([2]uint16{}) {
			delete(rs.engine, h)
		} else {
			rs.engine[h] = e
		}
	}
}

// clear drops every block of the rank, emitting a removal for each.
func (rs *rankState) clear() {
	for k, h := range rs.held {
		for ti := range h {
			if h[ti] > 0 {
				rs.emit(rs.rank, kvwire.Tier(ti+1), k, false)
			}
		}
	}
	clear(rs.engine)
	clear(rs.held)
}

// apply applies one event of the rank's KV-cache group (the Store routes
// each event to the state of its group_idx).
func (rs *rankState) apply(ev *Event, st *ApplyStats) {
	switch ev.Type {
	case BlockStored:
		rs.store(ev, st)
	case BlockRemoved:
		rs.remove(ev, st)
	case AllBlocksCleared:
		st.Cleared++
		rs.clear()
	}
}
