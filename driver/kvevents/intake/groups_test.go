package intake

import (
	"errors"
	"slices"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/kvwire"
)

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
			if err := check(&ev); err != nil {
				t.Fatalf("delivered an event that fails its own check: %v", err)
			}
			if ev.GroupIdx < 0 || ev.GroupIdx >= kvwire.MaxKVGroups || ev.Window < 0 {
				t.Fatalf("group %d window %d delivered", ev.GroupIdx, ev.Window)
			}
		}
		s := kvevents.NewStore()
		ss := s.Open()
		defer ss.Close()
		m := kvwire.NewMirror()
		kvtest.Feed(m, ss.Drain())
		s.Apply("r", 0, b)
		d2 := ss.Drain()
		kvtest.Feed(m, d2)
		for _, r := range d2.Replicas {
			u := &kvwire.Update{Version: kvwire.Version, Driver: "d", Epoch: 1, Seq: 1, Replicas: []kvwire.Replica{r}}
			if err := u.Validate(); err != nil {
				t.Fatalf("the store drained an update a router refuses: %v", err)
			}
		}
		if got, want := kvtest.MirrorBlocks(m, "r"), s.Blocks("r"); !slices.Equal(got, want) {
			t.Fatalf("mirror %v; store %v", got, want)
		}
	})
}
