package kvevents

import (
	"slices"
	"testing"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
)

// toks returns n token ids starting at start.
func toks(start, n int) []uint32 {
	t := make([]uint32, n)
	for i := range t {
		t[i] = uint32(start + i)
	}
	return t
}

func stored(hashes []uint64, parent *uint64, tokens []uint32, bs int) Event {
	ev := Event{Type: BlockStored, Hashes: hashes, Tokens: tokens, BlockSize: bs}
	if parent != nil {
		ev.Parent, ev.HasParent = *parent, true
	}
	return ev
}

func removed(m Medium, hashes ...uint64) Event {
	return Event{Type: BlockRemoved, Hashes: hashes, Medium: m}
}

func apply(s *Store, replica string, rank int, evs ...Event) {
	s.Apply(replica, rank, &Batch{Events: evs})
}

func u64(v uint64) *uint64 { return &v }

func gpu(rank int, keys ...blockkey.Key) []Block {
	var out []Block
	for _, k := range keys {
		out = append(out, Block{Rank: rank, Tier: kvwire.TierGPU, Key: k})
	}
	return out
}

func sortBlocks(bs []Block) []Block {
	slices.SortFunc(bs, func(a, b Block) int {
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

func TestBlockState(t *testing.T) {
	const bs = 4
	all := toks(100, 4*bs)
	keys := blockkey.Keys(nil, blockkey.Root(""), all, bs)
	loraKeys := blockkey.Keys(nil, blockkey.Root("sql"), all[:bs], bs)
	cpuStore := func(hashes ...uint64) Event {
		return Event{Type: BlockStored, Hashes: hashes, BlockSize: bs, Medium: MediumCPU}
	}
	cpu := func(ks ...blockkey.Key) []Block {
		var out []Block
		for _, k := range ks {
			out = append(out, Block{Tier: kvwire.TierCPU, Key: k})
		}
		return out
	}
	tests := []struct {
		name   string
		events []Event
		want   []Block
		stats  ApplyStats
	}{
		{
			name:   "chain in two events",
			events: []Event{stored([]uint64{1, 2}, nil, all[:2*bs], bs), stored([]uint64{3}, u64(2), all[2*bs:3*bs], bs)},
			want:   gpu(0, keys[:3]...),
			stats:  ApplyStats{Stored: 3},
		},
		{
			name:   "duplicate store needs two removes",
			events: []Event{stored([]uint64{1}, nil, all[:bs], bs), stored([]uint64{1}, nil, all[:bs], bs), removed(MediumGPU, 1)},
			want:   gpu(0, keys[0]),
			stats:  ApplyStats{Stored: 2, Removed: 1},
		},
		{
			name:   "remove drops the block",
			events: []Event{stored([]uint64{1, 2}, nil, all[:2*bs], bs), removed(MediumGPU, 2)},
			want:   gpu(0, keys[0]),
			stats:  ApplyStats{Stored: 2, Removed: 1},
		},
		{
			name:   "unknown remove is counted",
			events: []Event{removed(MediumGPU, 9), removed(MediumCPU, 9)},
			stats:  ApplyStats{UnknownRemoves: 2},
		},
		{
			name:   "unknown parent is tracked but not published, children too",
			events: []Event{stored([]uint64{5}, u64(77), all[bs:2*bs], bs), stored([]uint64{6}, u64(5), all[2*bs:3*bs], bs), removed(MediumGPU, 5)},
			stats:  ApplyStats{Stored: 2, Unresolved: 2, Removed: 1},
		},
		{
			name:   "CPU copy resolves through the engine hash",
			events: []Event{stored([]uint64{1, 2}, nil, all[:2*bs], bs), cpuStore(1, 2), removed(MediumGPU, 2)},
			want:   append(gpu(0, keys[0]), cpu(keys[0], keys[1])...),
			stats:  ApplyStats{Stored: 4, Removed: 1},
		},
		{
			name:   "CPU copy outlives GPU eviction, then goes",
			events: []Event{stored([]uint64{1}, nil, all[:bs], bs), cpuStore(1), removed(MediumGPU, 1), removed(MediumCPU, 1)},
			stats:  ApplyStats{Stored: 2, Removed: 2},
		},
		{
			name:   "CPU copy of an unknown hash is published once the GPU store resolves it",
			events: []Event{cpuStore(1), stored([]uint64{1}, nil, all[:bs], bs)},
			want:   append(gpu(0, keys[0]), cpu(keys[0])...),
			stats:  ApplyStats{Stored: 2, Unresolved: 1},
		},
		{
			name:   "LoRA name roots the chain",
			events: []Event{{Type: BlockStored, Hashes: []uint64{1}, Tokens: all[:bs], BlockSize: bs, LoRAName: "sql"}},
			want:   gpu(0, loraKeys[0]),
			stats:  ApplyStats{Stored: 1},
		},
		{
			name: "extra keys change the key",
			events: []Event{{Type: BlockStored, Hashes: []uint64{1}, Tokens: all[:bs], BlockSize: bs,
				Extra: []blockkey.Extra{blockkey.Extra(nil).AppendString("salt")}}},
			want:  gpu(0, blockkey.Chain(blockkey.Root(""), all[:bs], blockkey.Extra(nil).AppendString("salt"))),
			stats: ApplyStats{Stored: 1},
		},
		{
			name:   "all blocks cleared",
			events: []Event{stored([]uint64{1, 2}, nil, all[:2*bs], bs), cpuStore(1), {Type: AllBlocksCleared}, stored([]uint64{3}, nil, all[:bs], bs)},
			want:   gpu(0, keys[0]),
			stats:  ApplyStats{Stored: 4, Cleared: 1},
		},
		{
			name:   "other media are ignored",
			events: []Event{{Type: BlockStored, Hashes: []uint64{1}, BlockSize: bs, Medium: MediumOther}, removed(MediumOther, 1)},
			stats:  ApplyStats{OtherMedia: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore()
			apply(s, "r", 0, tt.events...)
			got := s.Blocks("r")
			if !slices.Equal(got, sortBlocks(tt.want)) {
				t.Errorf("blocks %v; want %v", got, tt.want)
			}
			if st := s.Stats(); st != tt.stats {
				t.Errorf("stats %+v; want %+v", st, tt.stats)
			}
		})
	}
}

func TestRanksAreSeparate(t *testing.T) {
	t.Parallel()
	s := NewStore()
	tk := toks(1, 4)
	key := blockkey.Keys(nil, blockkey.Root(""), tk, 4)[0]
	apply(s, "r", 0, stored([]uint64{1}, nil, tk, 4))
	apply(s, "r", 1, stored([]uint64{1}, nil, tk, 4))
	if got, want := s.Blocks("r"), append(gpu(0, key), gpu(1, key)...); !slices.Equal(got, want) {
		t.Fatalf("blocks %v; want %v", got, want)
	}
	s.ClearRank("r", 0)
	if got, want := s.Blocks("r"), gpu(1, key); !slices.Equal(got, want) {
		t.Errorf("after clearing rank 0: %v; want %v", got, want)
	}
	s.Remove("r")
	if got := s.Blocks("r"); len(got) != 0 || len(s.Replicas()) != 0 {
		t.Errorf("after Remove: %v, replicas %v", got, s.Replicas())
	}
}
