package kvevents

import (
	"reflect"
	"slices"
	"testing"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
)

func inGroup(g int, kind kvwire.Kind, window int, ev Event) Event {
	ev.GroupIdx, ev.Kind, ev.Window, ev.HasKind = g, kind, window, kind != kvwire.KindUnknown
	return ev
}

func group(g int, bs []Block) []Block {
	for i := range bs {
		bs[i].Group = g
	}
	return bs
}

// Two groups storing the same engine hashes hold them separately: the
// sliding-window group removing both leaves the full-attention group's
// residency, and a session sends each group's changes under its own
// KVGroup with the layout.
func TestGroupsHoldSeparately(t *testing.T) {
	t.Parallel()
	const bs = 4
	all := toks(100, 2*bs)
	keys := blockkey.Keys(nil, blockkey.Root(""), all, bs)
	s := NewStore()
	ss := s.Open()
	defer ss.Close()
	m := kvwire.NewMirror()
	feed(m, ss.Drain())
	apply(s, "r", 0,
		inGroup(0, kvwire.KindFull, 0, stored([]uint64{1, 2}, nil, all, bs)),
		inGroup(1, kvwire.KindSlidingWindow, 8, stored([]uint64{1, 2}, nil, all, bs)),
	)
	want := sortBlocks(append(group(0, gpu(0, keys...)), group(1, gpu(0, keys...))...))
	if got := s.Blocks("r"); !slices.Equal(got, want) {
		t.Fatalf("after stores: %v; want %v", got, want)
	}
	d := ss.Drain()
	feed(m, d)
	wantLayout := []kvwire.KVGroupSpec{{Index: 0, Kind: kvwire.KindFull, BlockSize: bs}, {Index: 1, Kind: kvwire.KindSlidingWindow, Window: 8, BlockSize: bs}}
	if len(d.Replicas) != 1 || !reflect.DeepEqual(d.Replicas[0].Layout, wantLayout) {
		t.Fatalf("drain %+v; want layout %+v", d.Replicas, wantLayout)
	}
	apply(s, "r", 0, inGroup(1, kvwire.KindUnknown, 0, removed(MediumGPU, 1, 2)))
	want = sortBlocks(group(0, gpu(0, keys...)))
	if got := s.Blocks("r"); !slices.Equal(got, want) {
		t.Fatalf("after group 1 removed both: %v; want group 0's %v", got, want)
	}
	feed(m, ss.Drain())
	if got := mirrorBlocks(m, "r"); !slices.Equal(got, want) {
		t.Errorf("receiver holds %v; want %v", got, want)
	}
	// A clear of the rank clears every group.
	apply(s, "r", 0, inGroup(1, kvwire.KindSlidingWindow, 8, stored([]uint64{1}, nil, all[:bs], bs)), Event{Type: AllBlocksCleared})
	if got := s.Blocks("r"); len(got) != 0 {
		t.Errorf("after AllBlocksCleared: %v; want nothing", got)
	}
}

// A Mamba group stores a state block whose parent only the full-attention
// group stored: the key still resolves, through the sibling group.
func TestGroupParentInSiblingGroup(t *testing.T) {
	t.Parallel()
	const bs = 4
	all := toks(100, 3*bs)
	keys := blockkey.Keys(nil, blockkey.Root(""), all, bs)
	s := NewStore()
	apply(s, "r", 0,
		inGroup(0, kvwire.KindFull, 0, stored([]uint64{1, 2, 3}, nil, all, bs)),
		inGroup(1, kvwire.KindMamba, 0, stored([]uint64{3}, u64(2), all[2*bs:], bs)),
	)
	want := sortBlocks(append(group(0, gpu(0, keys...)), group(1, gpu(0, keys[2]))...))
	if got := s.Blocks("r"); !slices.Equal(got, want) {
		t.Errorf("blocks %v; want %v", got, want)
	}
	if st := s.Stats(); st.Unresolved != 0 {
		t.Errorf("%d unresolved; want the Mamba block resolved through group 0", st.Unresolved)
	}
}

// A group that keeps only some blocks skips its null blocks: block_hashes
// name the kept blocks while token_ids span the whole range, the null
// blocks leading it (vLLM's cache_full_blocks). The kept blocks' keys
// come from a sibling group's copy of the hash when there is one, else by
// chaining through the null blocks' tokens; a store of null blocks only
// holds nothing.
func TestGroupStoreSkipsNullBlocks(t *testing.T) {
	t.Parallel()
	const bs = 4
	all := toks(100, 4*bs)
	keys := blockkey.Keys(nil, blockkey.Root(""), all, bs)
	full := inGroup(0, kvwire.KindFull, 0, stored([]uint64{1, 2, 3, 4}, nil, all, bs))
	for _, tc := range []struct {
		name string
		evs  []Event
		want []Block
	}{
		{"mamba state after null blocks, full group first", []Event{
			full,
			inGroup(1, kvwire.KindMamba, 0, stored([]uint64{4}, u64(1), all[bs:], bs)),
		}, append(group(0, gpu(0, keys...)), group(1, gpu(0, keys[3]))...)},
		{"mamba state after null blocks from the root, no sibling", []Event{
			inGroup(0, kvwire.KindMamba, 0, stored([]uint64{3}, nil, all[:3*bs], bs)),
		}, group(0, gpu(0, keys[2]))},
		{"mamba state after null blocks, mamba group first", []Event{
			inGroup(0, kvwire.KindMamba, 0, stored([]uint64{4}, nil, all, bs)),
			inGroup(1, kvwire.KindFull, 0, stored([]uint64{1, 2, 3, 4}, nil, all, bs)),
		}, append(group(0, gpu(0, keys[3])), group(1, gpu(0, keys...))...)},
		{"window blocks after null blocks", []Event{
			full,
			inGroup(1, kvwire.KindSlidingWindow, 8, stored([]uint64{3, 4}, nil, all, bs)),
		}, append(group(0, gpu(0, keys...)), group(1, gpu(0, keys[2:]...))...)},
		{"null blocks only", []Event{
			full,
			inGroup(1, kvwire.KindMamba, 0, stored([]uint64{}, u64(2), all[2*bs:], bs)),
		}, group(0, gpu(0, keys...))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := NewStore()
			apply(s, "r", 0, tc.evs...)
			if got, want := s.Blocks("r"), sortBlocks(tc.want); !slices.Equal(got, want) {
				t.Errorf("blocks %v; want %v", got, want)
			}
			if st := s.Stats(); st.Unresolved != 0 {
				t.Errorf("%d unresolved; want every kept block resolved", st.Unresolved)
			}
		})
	}
}
