package kvpub

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
	"github.com/llmgw/llmgw/internal/testkit/kvvectors"
)

// TestEncodeHybridMatchesReferenceBytes pins a hybrid group's events to the
// bytes kvvectors transcribed from vLLM's structs.
func TestEncodeHybridMatchesReferenceBytes(t *testing.T) {
	sw := capturedStored()
	sw.Group, sw.SpecKind, sw.Window = 1, kvcache.SlidingWindow, kvvectors.Window128
	mamba := capturedStored()
	mamba.Hashes = []kvcache.Hash{hashOf(kvvectors.Hash2)} // block 0 is a null block
	mamba.Extra = [][]string{nil}
	mamba.Group, mamba.SpecKind = 1, kvcache.Mamba
	none := mamba
	none.Hashes, none.Extra = nil, nil
	rem := removed()
	rem.Group = 1
	want := map[string]struct {
		schema Schema
		ev     kvcache.Event
	}{
		"BlockStored/array12 sliding_window":           {Schema{StoredLen: 12}, sw},
		"BlockStored/map sliding_window":               {Schema{Format: Map, StoredLen: 12}, sw},
		"BlockStored/array10 sliding_window":           {Schema{StoredLen: 10}, sw},
		"BlockStored/array12 mamba null block skipped": {Schema{StoredLen: 12}, mamba},
		"BlockStored/map mamba null block skipped":     {Schema{Format: Map, StoredLen: 12}, mamba},
		"BlockStored/array12 mamba all null":           {Schema{StoredLen: 12}, none},
		"BlockStored/map mamba all null":               {Schema{Format: Map, StoredLen: 12}, none},
		"BlockRemoved/array4 group 1":                  {Schema{StoredLen: 12}, rem},
		"BlockRemoved/map group 1":                     {Schema{Format: Map, StoredLen: 12}, rem},
	}
	vectors := kvvectors.Hybrid()
	if len(vectors) != len(want) {
		t.Fatalf("%d hybrid vectors; this test knows %d", len(vectors), len(want))
	}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			tt, ok := want[v.Name]
			if !ok {
				t.Fatalf("no event for vector %q", v.Name)
			}
			tt.schema.IntHashes = true
			var buf bytes.Buffer
			if err := Encode(&buf, tt.schema, kvvectors.TS, []kvcache.Event{tt.ev}, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), v.Payload) {
				t.Errorf("payload\n got % x\nwant % x", buf.Bytes(), v.Payload)
			}
		})
	}
}

// FuzzEncodeGroups encodes events with every group field in every schema
// and reads them back with a generic msgpack decoder: group_idx, the kind
// and the window must sit where vLLM's struct puts them, and the map form
// must leave the window out exactly when it is None.
func FuzzEncodeGroups(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint16(128), uint8(2), uint8(12), false, true)
	f.Add(uint8(0), uint8(0), uint16(0), uint8(1), uint8(10), false, false)
	f.Add(uint8(3), uint8(2), uint16(0), uint8(0), uint8(12), true, true)
	f.Fuzz(func(t *testing.T, group, kind uint8, window uint16, nHashes, storedLen uint8, isMap, stored bool) {
		kinds := []kvcache.SpecKind{kvcache.FullAttention, kvcache.SlidingWindow, kvcache.Mamba}
		spec := kinds[int(kind)%len(kinds)]
		w := 0
		if spec == kvcache.SlidingWindow {
			w = int(window) + 1
		}
		schema := Schema{StoredLen: 12, IntHashes: true}
		if isMap {
			schema.Format = Map
		} else if l := int(storedLen); l == 10 || l == 12 {
			schema.StoredLen = l
		}
		ev := kvcache.Event{Kind: kvcache.BlockRemoved, Medium: kvcache.MediumGPU, Group: int(group)}
		n := int(nHashes % 5)
		for i := range n {
			ev.Hashes = append(ev.Hashes, hashOf(uint64(i)+7))
		}
		if stored {
			ev.Kind, ev.SpecKind, ev.Window, ev.BlockSize = kvcache.BlockStored, spec, w, 4
			ev.Tokens = make([]uint32, 4*(n+1))
			ev.Extra = make([][]string, n)
		}
		var buf bytes.Buffer
		if err := Encode(&buf, schema, 1, []kvcache.Event{ev}, 0); err != nil {
			t.Fatal(err)
		}
		var batch []any
		if err := msgpack.Unmarshal(buf.Bytes(), &batch); err != nil {
			t.Fatalf("encoder output does not decode: %v", err)
		}
		got := fields(t, batch[1].([]any)[0], ev.Kind, schema)
		if fmt.Sprint(got["group_idx"]) != fmt.Sprint(int(group)) {
			t.Errorf("group_idx %v; want %d", got["group_idx"], group)
		}
		hashes, _ := got["block_hashes"].([]any)
		if len(hashes) != n {
			t.Errorf("%d hashes; want %d", len(hashes), n)
		}
		if !stored {
			return
		}
		extra, has := got["extra_keys"]
		if (n > 0) != (has && extra != nil) {
			t.Errorf("extra_keys %v (present %v) with %d hashes; want a list exactly when a block was kept", extra, has, n)
		}
		if schema.Format == Array && schema.StoredLen < 12 {
			return
		}
		if got["kv_cache_spec_kind"] != string(spec) {
			t.Errorf("kind %v; want %s", got["kv_cache_spec_kind"], spec)
		}
		win, has := got["kv_cache_spec_sliding_window"]
		switch {
		case w == 0 && win != nil:
			t.Errorf("window %v for a %s group; want None", win, spec)
		case w == 0 && schema.Format == Map && has:
			t.Error("map form carries a None window; msgspec omits it")
		case w != 0 && fmt.Sprint(win) != fmt.Sprint(w):
			t.Errorf("window %v; want %d", win, w)
		}
	})
}

// fields names an encoded event's fields in either form.
func fields(t *testing.T, raw any, kind kvcache.Kind, s Schema) map[string]any {
	t.Helper()
	if m, ok := raw.(map[string]any); ok {
		return m
	}
	arr, ok := raw.([]any)
	if !ok {
		t.Fatalf("event is %T", raw)
	}
	names := []string{"type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window"}
	if kind == kvcache.BlockRemoved {
		names = []string{"type", "block_hashes", "medium", "group_idx"}
	}
	if len(arr) > len(names) {
		t.Fatalf("array of %d fields; the schema has at most %d", len(arr), len(names))
	}
	m := map[string]any{}
	for i, v := range arr {
		m[names[i]] = v
	}
	return m
}
