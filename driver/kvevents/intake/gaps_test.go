package intake

import (
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/internal/testkit/kvvectors"
)

// storedFieldsFor is a BlockStored of one block (block_size 4) in vLLM's
// array form with the first n fields after the tag, lora_id loraID (nil
// for none) and, where the schema has it, lora_name loraName ("" for
// None). extra_keys, where present, is [None].
func storedFieldsFor(n int, loraID any, loraName string) []any {
	var name any
	if loraName != "" {
		name = loraName
	}
	all := []any{[]uint64{7}, nil, []uint32{1, 2, 3, 4}, 4, loraID, "GPU", name, []any{nil}, 0, "full_attention", nil}
	return append([]any{"BlockStored"}, all[:n]...)
}

func encodeBatch(t testing.TB, ev any) []byte {
	t.Helper()
	b, err := msgpack.Marshal([]any{1.5, []any{ev}, 0})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// storedMapFor is the map form of the same event: every field of the
// newest schema, lora_name left out when omitName (no vLLM does that; the
// decoder must still see the adapter block come without its name).
func storedMapFor(loraID any, omitName bool) map[string]any {
	m := map[string]any{"type": "BlockStored", "block_hashes": []uint64{7}, "parent_block_hash": nil,
		"token_ids": []uint32{1, 2, 3, 4}, "block_size": 4, "lora_id": loraID, "medium": "GPU",
		"group_idx": 0, "kv_cache_spec_kind": "full_attention"}
	if !omitName {
		m["lora_name"] = nil
		if loraID != nil {
			m["lora_name"] = "sql"
		}
	}
	return m
}

// gapCases are the schema vectors and what the decoder must see missing:
// the BlockStored array lengths vLLM shipped (kv_events.py; extra_keys is
// the 8th field after the tag, lora_name the 7th), with and without a LoRA.
func gapCases(t testing.TB) []struct {
	name    string
	payload []byte
	want    kvevents.Gap
} {
	type c = struct {
		name    string
		payload []byte
		want    kvevents.Gap
	}
	var out []c
	for _, n := range kvvectors.StoredArrayLengths {
		v := kvvectors.StoredArray(n)
		want := kvevents.Gap(0)
		if n < 9 {
			want = kvevents.GapExtraKeys
		}
		out = append(out, c{v.Name, v.Payload, want})
	}
	out = append(out,
		c{"BlockStored/map", kvvectors.StoredMap().Payload, 0},
		c{"array6 with lora_id", encodeBatch(t, storedFieldsFor(5, 3, "")), kvevents.GapExtraKeys | kvevents.GapLoRAName},
		c{"array7 with lora_id", encodeBatch(t, storedFieldsFor(6, 3, "")), kvevents.GapExtraKeys | kvevents.GapLoRAName},
		c{"array8 with lora_id and lora_name", encodeBatch(t, storedFieldsFor(7, 3, "sql")), kvevents.GapExtraKeys},
		c{"array9 with lora_id and lora_name", encodeBatch(t, storedFieldsFor(8, 3, "sql")), 0},
		c{"array12 with lora_id, lora_name None", encodeBatch(t, storedFieldsFor(11, 3, "")), 0},
		c{"array6 without lora_id", encodeBatch(t, storedFieldsFor(5, nil, "")), kvevents.GapExtraKeys},
		c{"map with lora_id and lora_name", encodeBatch(t, storedMapFor(3, false)), 0},
		c{"map with lora_id, no lora_name key", encodeBatch(t, storedMapFor(3, true)), kvevents.GapLoRAName},
		c{"removed, oldest schema", kvvectors.RemovedArray(2).Payload, 0},
	)
	return out
}

func TestSchemaGaps(t *testing.T) {
	for _, tt := range gapCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			var d Decoder
			b, err := d.Decode(tt.payload)
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Events) != 1 {
				t.Fatalf("%d events (stats %+v); want 1", len(b.Events), d.Stats)
			}
			if got := b.Events[0].Gaps; got != tt.want {
				t.Errorf("gaps %b; want %b", got, tt.want)
			}
		})
	}
}

// A replica whose events show a gap is untrusted, with the reason naming
// the missing field, and sessions are sent none of its blocks.
func TestStoreWithholdsUntrustedReplica(t *testing.T) {
	tests := []struct {
		name   string
		events []any
		reason string // a substring of Untrusted; "" for trusted
	}{
		{"newest schema", []any{storedFieldsFor(11, nil, "")}, ""},
		{"no extra_keys", []any{storedFieldsFor(7, nil, "")}, "carry no extra_keys"},
		{"lora_id without lora_name", []any{storedFieldsFor(6, 3, "")}, "lora_id without lora_name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := kvevents.NewStore()
			ss := s.Open()
			defer ss.Close()
			ss.Drain() // the first drain is a snapshot
			var d Decoder
			b, err := d.Decode(encodeBatch(t, tt.events[0]))
			if err != nil {
				t.Fatal(err)
			}
			s.Apply("r", 0, b)
			reps := ss.Drain().Replicas
			if len(reps) != 1 {
				t.Fatalf("drained %+v; want one replica", reps)
			}
			got := s.Untrusted("r")
			switch {
			case tt.reason == "" && (got != "" || len(reps[0].Groups) != 1 || reps[0].Approx != ""):
				t.Errorf("untrusted %q, entry %+v; want trusted with its block", got, reps[0])
			case tt.reason != "" && (!strings.Contains(got, tt.reason) || len(reps[0].Groups) != 0 || !reps[0].Reset || reps[0].Approx != got):
				t.Errorf("untrusted %q, entry %+v; want a reset naming %q and no blocks", got, reps[0], tt.reason)
			}
			if tt.reason != "" && len(s.Blocks("r")) != 1 {
				t.Errorf("store holds %v; want the block still tracked", s.Blocks("r"))
			}
			s.Announce("r") // a new engine, maybe of a newer vLLM
			if got := s.Untrusted("r"); got != "" {
				t.Errorf("after a new engine's announcement: untrusted %q; want trusted", got)
			}
			if reps := ss.Drain().Replicas; len(reps) != 1 || !reps[0].Reset || reps[0].Approx != "" {
				t.Errorf("after the announcement drained %+v; want a reset without a reason", reps)
			}
		})
	}
}

// FuzzSchemaGaps builds BlockStored events of any field count, LoRA id and
// name, and checks the detection against the rule: extra_keys missing in
// an array of no more than 8 fields, lora_name missing beside a non-nil
// lora_id.
func FuzzSchemaGaps(f *testing.F) {
	for _, tt := range gapCases(f) {
		f.Add(tt.payload, uint8(0), int64(0), false, "")
	}
	f.Add([]byte(nil), uint8(5), int64(3), true, "")
	f.Add([]byte(nil), uint8(7), int64(3), true, "sql")
	f.Fuzz(func(t *testing.T, payload []byte, fields uint8, loraID int64, hasLoRA bool, name string) {
		if len(payload) > 0 {
			var d Decoder
			if b, err := d.Decode(payload); err == nil {
				for _, ev := range b.Events {
					if ev.Type != kvevents.BlockStored && ev.Gaps != 0 {
						t.Fatalf("%v with gaps %b", ev.Type, ev.Gaps)
					}
				}
			}
			return
		}
		n := 5 + int(fields)%7 // 5 to 11 fields after the tag
		var id any
		if hasLoRA {
			id = loraID
		}
		var d Decoder
		b, err := d.Decode(encodeBatch(t, storedFieldsFor(n, id, name)))
		if err != nil || len(b.Events) != 1 {
			if len(name) <= maxLoRAName {
				t.Fatalf("decode: %v, %d events", err, len(b.Events))
			}
			return
		}
		want := kvevents.Gap(0)
		if n <= 7 {
			want |= kvevents.GapExtraKeys
		}
		if hasLoRA && n < 7 {
			want |= kvevents.GapLoRAName
		}
		if got := b.Events[0].Gaps; got != want {
			t.Fatalf("%d fields, lora_id %v: gaps %b; want %b", n, id, got, want)
		}
	})
}
