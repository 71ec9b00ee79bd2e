package kvtest

import (
	"slices"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
)

// Toks returns n token ids starting at start.
func Toks(start, n int) []uint32 {
	t := make([]uint32, n)
	for i := range t {
		t[i] = uint32(start + i)
	}
	return t
}

// Stored is a GPU BlockStored event of hashes, chained on parent when it
// is not nil.
func Stored(hashes []uint64, parent *uint64, tokens []uint32, bs int) kvevents.Event {
	ev := kvevents.Event{Type: kvevents.BlockStored, Hashes: hashes, Tokens: tokens, BlockSize: bs}
	if parent != nil {
		ev.Parent, ev.HasParent = *parent, true
	}
	return ev
}

// Removed is a BlockRemoved event of hashes on medium m.
func Removed(m kvevents.Medium, hashes ...uint64) kvevents.Event {
	return kvevents.Event{Type: kvevents.BlockRemoved, Hashes: hashes, Medium: m}
}

// Apply applies evs to replica's rank as one batch.
func Apply(s *kvevents.Store, replica string, rank int, evs ...kvevents.Event) {
	s.Apply(replica, rank, &kvevents.Batch{Events: evs})
}

// U64 returns a pointer to v, for Stored's parent.
func U64(v uint64) *uint64 { return &v }

// GPU is keys as GPU blocks of rank.
func GPU(rank int, keys ...blockkey.Key) []kvevents.Block {
	var out []kvevents.Block
	for _, k := range keys {
		out = append(out, kvevents.Block{Rank: rank, Tier: kvwire.TierGPU, Key: k})
	}
	return out
}

// SortBlocks sorts bs in Store.Blocks' order (rank, tier, KV-cache group, key) and
// returns it.
func SortBlocks(bs []kvevents.Block) []kvevents.Block {
	slices.SortFunc(bs, func(a, b kvevents.Block) int {
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		if a.Tier != b.Tier {
			return int(a.Tier) - int(b.Tier)
		}
		if a.Group != b.Group {
			return a.Group - b.Group
		}
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return bs
}

// MirrorBlocks returns what a receiver applying every drain of driver "d"
// holds for replica, sorted.
func MirrorBlocks(m *kvwire.Mirror, replica string) []kvevents.Block {
	return mirrored(m, "d", replica)
}

// Feed applies one session drain to m as driver "d"'s update.
func Feed(m *kvwire.Mirror, d kvevents.Drained) {
	m.ApplyUpdate(&kvwire.Update{Driver: "d", Snapshot: d.Snapshot, Replicas: d.Replicas})
}

func mirrored(m *kvwire.Mirror, driver, replica string) []kvevents.Block {
	var out []kvevents.Block
	for _, b := range m.Blocks(driver, replica) {
		out = append(out, kvevents.Block{Rank: b.Rank, Tier: b.Tier, Key: blockkey.Key(b.Key), Group: b.Group})
	}
	return SortBlocks(out)
}
