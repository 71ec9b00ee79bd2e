package intake

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/kvvectors"
)

// wantExtra turns a vector's extra_keys meaning into blockkey bytes as the
// decoder must build them: the LoRA name left out, strings as strings.
func wantExtra(t *testing.T, e kvvectors.Event) []blockkey.Extra {
	t.Helper()
	if !e.HasExtraKeysList {
		return nil
	}
	out := make([]blockkey.Extra, len(e.ExtraKeys))
	for i, entry := range e.ExtraKeys {
		items, _ := entry.([]any)
		var x blockkey.Extra
		for j, it := range items {
			s, ok := it.(string)
			if !ok {
				t.Fatalf("vector extra item %T not supported by this test", it)
			}
			if j == 0 && e.LoRAName != nil && s == *e.LoRAName {
				continue
			}
			x = x.AppendString(s)
		}
		out[i] = x
	}
	return out
}

func checkEvent(t *testing.T, got kvevents.Event, want kvvectors.Event) {
	t.Helper()
	if got.Type.String() != want.Type {
		t.Fatalf("type %v; want %s", got.Type, want.Type)
	}
	if !slices.Equal(got.Hashes, want.BlockHashes) {
		t.Errorf("hashes %v; want %v", got.Hashes, want.BlockHashes)
	}
	if (want.ParentBlockHash != nil) != got.HasParent || (got.HasParent && got.Parent != *want.ParentBlockHash) {
		t.Errorf("parent %v/%v; want %v", got.Parent, got.HasParent, want.ParentBlockHash)
	}
	if !slices.Equal(got.Tokens, want.TokenIDs) && !(len(got.Tokens) == 0 && len(want.TokenIDs) == 0) {
		t.Errorf("tokens %v; want %v", got.Tokens, want.TokenIDs)
	}
	if got.BlockSize != want.BlockSize {
		t.Errorf("block size %d; want %d", got.BlockSize, want.BlockSize)
	}
	wantMedium := kvevents.MediumGPU
	if want.Medium != nil && *want.Medium == "CPU" {
		wantMedium = kvevents.MediumCPU
	}
	if got.Medium != wantMedium {
		t.Errorf("medium %v; want %v", got.Medium, wantMedium)
	}
	wantLoRA := ""
	if want.LoRAName != nil {
		wantLoRA = *want.LoRAName
	}
	if got.LoRAName != wantLoRA {
		t.Errorf("lora %q; want %q", got.LoRAName, wantLoRA)
	}
	wantGroup := 0
	if want.GroupIdx != nil {
		wantGroup = *want.GroupIdx
	}
	if got.GroupIdx != wantGroup {
		t.Errorf("group %d; want %d", got.GroupIdx, wantGroup)
	}
	wantKind, wantWindow := kvwire.KindUnknown, 0
	if want.KVCacheSpecKind != nil {
		wantKind = kindOf([]byte(*want.KVCacheSpecKind))
	}
	if want.SlidingWindow != nil {
		wantWindow = *want.SlidingWindow
	}
	if got.HasKind != (want.KVCacheSpecKind != nil) || got.Kind != wantKind || got.Window != wantWindow {
		t.Errorf("kind %v/%v window %d; want %v window %d", got.Kind, got.HasKind, got.Window, wantKind, wantWindow)
	}
	wx := wantExtra(t, want)
	if (wx == nil) != (got.Extra == nil) || len(wx) != len(got.Extra) {
		t.Fatalf("extra %v; want %v", got.Extra, wx)
	}
	for i := range wx {
		if string(wx[i]) != string(got.Extra[i]) {
			t.Errorf("extra[%d] %q; want %q", i, got.Extra[i], wx[i])
		}
	}
}

func TestDecodeVectors(t *testing.T) {
	vectors := append(kvvectors.All(), kvvectors.Extended()...)
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			var d Decoder
			b, err := d.Decode(v.Payload)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if b.TS != v.Want.TS {
				t.Errorf("ts %v; want %v", b.TS, v.Want.TS)
			}
			if (v.Want.DataParallelRank != nil) != b.HasRank || (b.HasRank && b.Rank != *v.Want.DataParallelRank) {
				t.Errorf("rank %d/%v; want %v", b.Rank, b.HasRank, v.Want.DataParallelRank)
			}
			if len(b.Events) != len(v.Want.Events) {
				t.Fatalf("%d events; want %d", len(b.Events), len(v.Want.Events))
			}
			for i := range b.Events {
				checkEvent(t, b.Events[i], v.Want.Events[i])
			}
		})
	}
}

func TestDecodeCountsUnknowns(t *testing.T) {
	var d Decoder
	if _, err := d.Decode(kvvectors.UnknownEventAndFields().Payload); err != nil {
		t.Fatal(err)
	}
	want := DecodeStats{Batches: 1, Events: 2, UnknownEvents: 1, UnknownFields: 2}
	if d.Stats != want {
		t.Errorf("stats %+v; want %+v", d.Stats, want)
	}
}

// TestDecodeReusesBuffers decodes two batches with one Decoder and checks the
// second does not see the first's events.
func TestDecodeReusesBuffers(t *testing.T) {
	var d Decoder
	if _, err := d.Decode(kvvectors.StoredArray(12).Payload); err != nil {
		t.Fatal(err)
	}
	b, err := d.Decode(kvvectors.RemovedArray(3).Payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Events) != 1 || b.Events[0].Type != kvevents.BlockRemoved || !slices.Equal(b.Events[0].Hashes, []uint64{kvvectors.Hash1}) {
		t.Errorf("second batch %+v", b.Events)
	}
}

func TestDecodeBadEvents(t *testing.T) {
	good := kvvectors.StoredArray(12).Payload
	// block_size (0x04) follows the last token id, 315 = cd 01 3b.
	bsAt := bytes.Index(good, []byte{0xcd, 0x01, 0x3b}) + 3
	tests := []struct {
		name   string
		mutate func([]byte) []byte
	}{
		{"block size zero", func(p []byte) []byte { p[bsAt] = 0x00; return p }},
		{"block size mismatching tokens", func(p []byte) []byte { p[bsAt] = 0x05; return p }},
		{"negative block size", func(p []byte) []byte { p[bsAt] = 0xff; return p }},
		{"block size a string", func(p []byte) []byte { p[bsAt] = 0xa0; return p }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if good[bsAt] != 0x04 {
				t.Fatalf("offset %d holds %#x, not the block size", bsAt, good[bsAt])
			}
			var d Decoder
			b, err := d.Decode(tt.mutate(slices.Clone(good)))
			if err != nil {
				t.Fatalf("Decode: %v (a bad event must not fail the batch)", err)
			}
			if len(b.Events) != 0 || d.Stats.BadEvents != 1 {
				t.Errorf("events %d, stats %+v; want the event skipped and counted", len(b.Events), d.Stats)
			}
		})
	}
}

func TestDecodeMalformed(t *testing.T) {
	good := kvvectors.StoredArray(12).Payload
	tests := []struct {
		name    string
		payload []byte
	}{
		{"empty", nil},
		{"not an array", []byte{0xc3}},
		{"one element", []byte{0x91, 0x00}},
		{"truncated", good[:len(good)-5]},
		{"trailing bytes", append(slices.Clone(good), 0x00)},
		{"huge array claim", []byte{0x93, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff}},
		{"ts a string", []byte{0x92, 0xa1, 'x', 0x90}},
		{"events not an array", []byte{0x92, 0x00, 0x00}},
		{"map without events", []byte{0x81, 0xa2, 't', 's', 0x00}},
		{"invalid type byte", []byte{0x92, 0x00, 0x91, 0x92, 0xc1, 0x00}},
		{"deep nesting", append(append([]byte{0x92, 0x00, 0x91, 0x92, 0xa1, 'X'}, slices.Repeat([]byte{0x91}, 100)...), 0x00)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Decoder
			_, err := d.Decode(tt.payload)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err %v; want ErrMalformed", err)
			}
			if d.Stats.BadBatches != 1 {
				t.Errorf("bad batches %d; want 1", d.Stats.BadBatches)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, v := range append(kvvectors.All(), kvvectors.Extended()...) {
		f.Add(v.Payload)
	}
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
		}
		// Whatever the decoder accepts, the block state must take without
		// panicking, and a session must mirror it: all of it, or, for a
		// replica whose schema lacks a key-deciding field, none of it.
		s := kvevents.NewStore()
		ss := s.Open()
		defer ss.Close()
		m := kvwire.NewMirror()
		kvtest.Feed(m, ss.Drain())
		s.Apply("r", 0, b)
		s.Apply("r", 0, b)
		kvtest.Feed(m, ss.Drain())
		want := s.Blocks("r")
		if s.Untrusted("r") != "" {
			want = nil
		}
		if got := kvtest.MirrorBlocks(m, "r"); !slices.Equal(got, want) {
			t.Fatalf("mirror %v; want %v (untrusted: %q)", got, want, s.Untrusted("r"))
		}
	})
}

// TestDecodedKeysMatchPromptKeys is the contract between driver and router:
// the key the driver derives from a decoded event (LoRA "sql", cache_salt
// "salt" in extra_keys, byte vector from the reference) equals the key the
// router computes from the prompt's tokens, LoRA name and salt.
func TestDecodedKeysMatchPromptKeys(t *testing.T) {
	v := kvvectors.LoRAStored()
	var d Decoder
	b, err := d.Decode(v.Payload)
	if err != nil {
		t.Fatal(err)
	}
	s := kvevents.NewStore()
	s.Apply("r", 0, b)
	want := blockkey.PromptKeys(nil, "sql", "salt", kvvectors.Tokens[:4], 4)
	if got := s.Blocks("r"); len(got) != 1 || got[0].Key != want[0] {
		t.Errorf("driver key %v; router key %v", got, want)
	}
}

// TestDecodeOffloadPlaceholders: a CPU store with block_size 0 and no
// tokens is the placeholder vLLM's OffloadingConnector sends without
// self_describing_kv_events: skipped and counted as such, not as a bad
// event; a GPU store with block_size 0 stays a bad event.
func TestDecodeOffloadPlaceholders(t *testing.T) {
	cpu := kvvectors.CPUStoredArray().Payload
	at := bytes.Index(cpu, []byte{0x04, 0xc0, 0xa3, 'C', 'P', 'U'})
	if at < 0 {
		t.Fatal("CPUStoredArray no longer holds block_size 4 before medium CPU")
	}
	for _, tc := range []struct {
		medium            string
		placeholders, bad uint64
	}{{"CPU", 1, 0}, {"GPU", 0, 1}} {
		p := slices.Clone(cpu)
		p[at] = 0x00
		copy(p[at+3:], tc.medium)
		var d Decoder
		b, err := d.Decode(p)
		if err != nil {
			t.Fatalf("%s: %v", tc.medium, err)
		}
		if len(b.Events) != 0 || d.Stats.OffloadPlaceholders != tc.placeholders || d.Stats.BadEvents != tc.bad {
			t.Errorf("%s with block_size 0: %d events, stats %+v; want %d placeholders, %d bad", tc.medium, len(b.Events), d.Stats, tc.placeholders, tc.bad)
		}
	}
}
