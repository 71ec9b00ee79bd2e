package kvevents

import (
	"slices"

	"github.com/llmgw/llmgw/internal/kvwire"
)

// layout is a replica's KV-cache groups as its BlockStored events
// declared them, by group index.
type layout map[int]kvwire.KVGroupSpec

// specs is l sorted by index; nil when no event named a group, which
// routers read as one full-attention group.
func (l layout) specs() []kvwire.KVGroupSpec {
	if len(l) == 0 {
		return nil
	}
	out := make([]kvwire.KVGroupSpec, 0, len(l))
	for _, g := range l {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b kvwire.KVGroupSpec) int { return a.Index - b.Index })
	return out
}

// learn notes the group of a BlockStored event with tokens: its kind and
// window when the event names them, its block size, and the replica's
// block size when the group is the primary one. Events of a vLLM without
// group fields (group 0, no kind) leave the layout empty.
func (r *replicaState) learn(ev *Event) {
	if ev.HasKind || ev.GroupIdx > 0 {
		if r.layout == nil {
			r.layout = layout{}
		}
		g := kvwire.KVGroupSpec{Index: ev.GroupIdx, Kind: ev.Kind, BlockSize: ev.BlockSize}
		if g.Kind == kvwire.KindSlidingWindow {
			if g.Window = ev.Window; g.Window <= 0 {
				g.Kind = kvwire.KindUnknown // no window: hold it to full attention's rule
			}
		}
		r.layout[ev.GroupIdx] = g
	}
	if ev.GroupIdx == r.layout.primary() {
		r.blockSize = ev.BlockSize
	}
}

// learnOffload notes the block size of a BlockStored event without
// tokens (an offloaded copy) in the CPU tier of the primary group: vLLM's
// offloading connector sends its offloaded_block_size there, and the
// router needs it to predict what the connector loads.
func (r *replicaState) learnOffload(ev *Event) {
	if t, ok := tierOf(ev.Medium); ok && t == kvwire.TierCPU && ev.BlockSize > 0 && ev.GroupIdx == r.layout.primary() {
		r.offloadSize = ev.BlockSize
	}
}

// primary is kvwire.Primary of l, without sorting it.
func (l layout) primary() int {
	best := -1
	for _, g := range l {
		if (g.Kind == kvwire.KindFull || g.Kind == kvwire.KindUnknown) && (best < 0 || g.Index < best) {
			best = g.Index
		}
	}
	return max(best, 0)
}

// clearRank drops every block of every KV-cache group of rank.
func (r *replicaState) clearRank(rank int) {
	for rg, rs := range r.ranks {
		if rg.rank == rank {
			rs.clear()
		}
	}
}
