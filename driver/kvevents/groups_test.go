package kvevents

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

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

func TestKindOf(t *testing.T) {
	for in, want := range map[string]kvwire.Kind{
		"full_attention": kvwire.KindFull, "mla_attention": kvwire.KindFull, "sink_full_attention": kvwire.KindFull,
		"sliding_window": kvwire.KindSlidingWindow, "sliding_window_mla": kvwire.KindSlidingWindow,
		"mamba": kvwire.KindMamba, "chunked_local_attention": kvwire.KindUnknown, "": kvwire.KindUnknown,
	} {
		if got := kindOf([]byte(in)); got != want {
			t.Errorf("kindOf(%q) = %v; want %v", in, got, want)
		}
	}
}

// hybridPayload is a vLLM batch whose events carry every group field, in
// array form (msgspec's positional encoding) or map form.
func hybridPayload(t testing.TB, asMap bool, group int, kind any, window any) []byte {
	t.Helper()
	tokens := []any{1, 2, 3, 4}
	var stored, removed any
	if asMap {
		stored = map[string]any{"type": "BlockStored", "block_hashes": []any{7}, "parent_block_hash": nil, "token_ids": tokens,
			"block_size": 4, "lora_id": nil, "medium": "GPU", "lora_name": nil, "extra_keys": nil, "group_idx": group,
			"kv_cache_spec_kind": kind, "kv_cache_spec_sliding_window": window}
		removed = map[string]any{"type": "BlockRemoved", "block_hashes": []any{7}, "medium": "GPU", "group_idx": group}
	} else {
		stored = []any{"BlockStored", []any{7}, nil, tokens, 4, nil, "GPU", nil, nil, group, kind, window}
		removed = []any{"BlockRemoved", []any{7}, "GPU", group}
	}
	b, err := msgpack.Marshal([]any{1.5, []any{stored, removed}, 0})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeGroupFields(t *testing.T) {
	for _, tc := range []struct {
		name       string
		group      int
		kind       any
		window     any
		wantKind   kvwire.Kind
		wantWindow int
		bad        bool
	}{
		{"sliding window", 1, "sliding_window", 128, kvwire.KindSlidingWindow, 128, false},
		{"mamba", 2, "mamba", nil, kvwire.KindMamba, 0, false},
		{"full", 0, "full_attention", nil, kvwire.KindFull, 0, false},
		{"group out of range", kvwire.MaxKVGroups, "full_attention", nil, 0, 0, true},
		{"window zero", 1, "sliding_window", 0, 0, 0, true},
		{"kind not a string", 1, 5, nil, 0, 0, true},
	} {
		for _, asMap := range []bool{false, true} {
			var d Decoder
			b, err := d.Decode(hybridPayload(t, asMap, tc.group, tc.kind, tc.window))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if tc.bad {
				wantBad := uint64(1) // the store; the removal has no kind or window
				if tc.group >= kvwire.MaxKVGroups {
					wantBad = 2
				}
				if uint64(len(b.Events)) != 2-wantBad || d.Stats.BadEvents != wantBad {
					t.Errorf("%s (map %v): %d events, %d bad; want %d skipped as bad", tc.name, asMap, len(b.Events), d.Stats.BadEvents, wantBad)
				}
				continue
			}
			if len(b.Events) != 2 {
				t.Fatalf("%s: %d events; want 2", tc.name, len(b.Events))
			}
			st, rm := b.Events[0], b.Events[1]
			if st.GroupIdx != tc.group || st.Kind != tc.wantKind || !st.HasKind || st.Window != tc.wantWindow || rm.GroupIdx != tc.group {
				t.Errorf("%s (map %v): stored group %d kind %v window %d, removed group %d", tc.name, asMap, st.GroupIdx, st.Kind, st.Window, rm.GroupIdx)
			}
		}
	}
}

// FuzzDecodeGroups fuzzes the decoder from payloads with every group
// field; whatever it accepts, the per-group state and a receiver agree.
func FuzzDecodeGroups(f *testing.F) {
	f.Add(hybridPayload(f, false, 1, "sliding_window", 128))
	f.Add(hybridPayload(f, true, 1, "sliding_window", 128))
	f.Add(hybridPayload(f, false, 2, "mamba", nil))
	f.Add(hybridPayload(f, true, 0, "full_attention", nil))
	f.Fuzz(func(t *testing.T, payload []byte) {
		var d Decoder
		b, err := d.Decode(payload)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		for _, ev := range b.Events {
			if err := ev.check(); err != nil {
				t.Fatalf("delivered an event that fails its own check: %v", err)
			}
			if ev.GroupIdx < 0 || ev.GroupIdx >= kvwire.MaxKVGroups || ev.Window < 0 {
				t.Fatalf("group %d window %d delivered", ev.GroupIdx, ev.Window)
			}
		}
		s := NewStore()
		ss := s.Open()
		defer ss.Close()
		m := kvwire.NewMirror()
		feed(m, ss.Drain())
		s.Apply("r", 0, b)
		d2 := ss.Drain()
		feed(m, d2)
		for _, r := range d2.Replicas {
			u := &kvwire.Update{Version: kvwire.Version, Driver: "d", Epoch: 1, Seq: 1, Replicas: []kvwire.Replica{r}}
			if err := u.Validate(); err != nil {
				t.Fatalf("the store drained an update a router refuses: %v", err)
			}
		}
		if got, want := mirrorBlocks(m, "r"), s.Blocks("r"); !slices.Equal(got, want) {
			t.Fatalf("mirror %v; store %v", got, want)
		}
	})
}

// A Mamba group stores a state block whose parent only the full-attention
// group stored: the key still resolves, through the sibling group.
func TestGroupParentInSiblingGroup(t *testing.T) {
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
