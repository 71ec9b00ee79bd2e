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
	parent   uint64    // engine hash of the block before (hasParent)
	ref      [2]uint16 // per tier: GPU, CPU
	resolved bool      // false: parent chain unknown, key meaningless
	// hasParent: parent is known. An offloaded block larger than the GPU
	// block is named by its last GPU block's hash and covers the blocks
	// before it (offloaded); they are found through these links.
	hasParent bool
}

// holders counts, per tier, the engine entries that hold a canonical key.
// Normally 0 or 1; more only if two engine hashes map to one key.
type holders [2]uint16

// rankState is the block state of one KV-cache group of one data-parallel
// rank of a replica. The groups of a hybrid model store blocks of the same
// engine hashes, and each removes its own, so each group counts its own
// references: a removal in one never ends another's residency.
type rankState struct {
	rank int
	// blockSize is the engine block size of this group's stores with
	// tokens (0 before any): an offloaded store of a multiple of it covers
	// that many of its blocks.
	blockSize int
	// offloadSize is the block size of its offloaded stores (0 before
	// any); BlockRemoved carries none, so removals are read at it.
	offloadSize int
	engine      map[uint64]engineEntry   // engine hash -> entry
	held        map[blockkey.Key]holders // canonical key -> holders per tier
	emit        func(rank int, t kvwire.Tier, k blockkey.Key, add bool)
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
	Stored     uint64 // blocks stored
	Removed    uint64 // blocks removed
	Cleared    uint64 // AllBlocksCleared events
	Unresolved uint64 // blocks stored whose parent chain is unknown: tracked, not published
	// OffloadUnmapped counts offloaded blocks whose size is not a multiple
	// of the GPU block size (or came before any GPU store): the GPU blocks
	// they cover cannot be named, so they are not published.
	OffloadUnmapped uint64
	UnknownRemoves  uint64 // removes of a hash (or tier) the state does not hold
	OtherMedia      uint64 // events for a medium that is not indexed
	Untrusted       uint64 // replicas found to send a schema with a Gap (their keys are withheld)
}

func (s *ApplyStats) add(o ApplyStats) {
	s.Stored += o.Stored
	s.Removed += o.Removed
	s.Cleared += o.Cleared
	s.Unresolved += o.Unresolved
	s.OffloadUnmapped += o.OffloadUnmapped
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
		rs.storeOffloaded(ev, ti, st)
		return
	}
	rs.blockSize = ev.BlockSize
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
		linkParent(&e, ev, i, skip)
		rs.addRef(h, e, ti, st)
		parent = e.key
		resolved = e.resolved
	}
}

// linkParent records the engine hash before block i of ev, where the
// event names it: the block before in the event, or its parent when no
// null blocks lie between.
func linkParent(e *engineEntry, ev *Event, i, skip int) {
	switch {
	case e.hasParent:
	case i > 0:
		e.parent, e.hasParent = ev.Hashes[i-1], true
	case ev.HasParent && skip == 0:
		e.parent, e.hasParent = ev.Parent, true
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

// covered lists the engine hashes of the GPU blocks an offloaded block of
// size blockSize named h covers, last first: h and the blocks before it
// (vLLM's offloading connector names a block of block_size_factor GPU
// blocks by its last one's hash). It is nil when they cannot all be
// named: a size that is not a multiple of the GPU block size, or a chain
// this rank does not know.
func (rs *rankState) covered(h uint64, blockSize int, buf []uint64) []uint64 {
	if rs.blockSize <= 0 || blockSize%rs.blockSize != 0 {
		return nil
	}
	buf = append(buf[:0], h)
	for n := blockSize / rs.blockSize; len(buf) < n; {
		e, ok := rs.engine[buf[len(buf)-1]]
		if !ok || !e.hasParent {
			return nil
		}
		buf = append(buf, e.parent)
	}
	return buf
}

// storeOffloaded applies a store without tokens: an offloaded copy of
// blocks known by engine hash. A copy of the GPU block size is that block;
// a larger one (the offloading connector's offloaded_block_size) is the
// GPU blocks it covers, each held in the tier.
func (rs *rankState) storeOffloaded(ev *Event, ti int, st *ApplyStats) {
	rs.offloadSize = ev.BlockSize
	var buf []uint64
	for _, h := range ev.Hashes {
		hs := []uint64{h}
		if rs.blockSize > 0 && ev.BlockSize != rs.blockSize {
			if buf = rs.covered(h, ev.BlockSize, buf); buf == nil {
				st.OffloadUnmapped++
				continue
			}
			hs = buf
		}
		for _, c := range hs {
			e, known := rs.engine[c]
			if !known || !e.resolved {
				st.Unresolved++
			}
			rs.addRef(c, e, ti, st)
		}
	}
}

// remove applies a BlockRemoved event. A removal names blocks as their
// stores did: an offloaded block larger than the GPU block by its last GPU
// block, so the CPU tier removes what that block covered.
func (rs *rankState) remove(ev *Event, st *ApplyStats) {
	tier, ok := tierOf(ev.Medium)
	if !ok {
		st.OtherMedia++
		return
	}
	ti := tierIndex(tier)
	for _, h := range ev.Hashes {
		if tier == kvwire.TierCPU && rs.blockSize > 0 && rs.offloadSize > 0 && rs.offloadSize != rs.blockSize {
			rs.removeCovered(h, ti, st)
			continue
		}
		rs.removeOne(h, ti, st)
	}
}

// removeCovered removes the GPU blocks an offloaded block named h covers.
func (rs *rankState) removeCovered(h uint64, ti int, st *ApplyStats) {
	hs := rs.covered(h, rs.offloadSize, nil)
	if hs == nil {
		st.UnknownRemoves++
		return
	}
	for _, c := range hs {
		rs.removeOne(c, ti, st)
	}
}

func (rs *rankState) removeOne(h uint64, ti int, st *ApplyStats) {
	e, known := rs.engine[h]
	if !known || e.ref[ti] == 0 {
		st.UnknownRemoves++
		return
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
