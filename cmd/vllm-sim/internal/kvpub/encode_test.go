package kvpub

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
	"github.com/llmgw/llmgw/internal/testkit/kvvectors"
)

// hashOf makes an engine hash whose int form (last 8 bytes) is v.
func hashOf(v uint64) kvcache.Hash {
	var h kvcache.Hash
	h[0] = 0xaa // bytes the int form drops
	binary.BigEndian.PutUint64(h[24:], v)
	return h
}

func capturedStored() kvcache.Event {
	return kvcache.Event{
		Kind:      kvcache.BlockStored,
		Hashes:    []kvcache.Hash{hashOf(kvvectors.Hash1), hashOf(kvvectors.Hash2)},
		Tokens:    kvvectors.Tokens,
		BlockSize: 4,
		Medium:    kvcache.MediumGPU,
	}
}

// loraSalted is the one-block store of LoRA "sql" (id 1) with cache_salt
// "salt" that kvvectors.LoRAStored encodes.
func loraSalted() kvcache.Event {
	return kvcache.Event{
		Kind: kvcache.BlockStored, Hashes: []kvcache.Hash{hashOf(kvvectors.Hash1)}, Tokens: kvvectors.Tokens[:4],
		BlockSize: 4, LoRAName: "sql", LoRAID: 1, Medium: kvcache.MediumGPU, Extra: [][]string{{"sql", "salt"}},
	}
}

func removed() kvcache.Event {
	return kvcache.Event{Kind: kvcache.BlockRemoved, Hashes: []kvcache.Hash{hashOf(kvvectors.Hash1)}, Medium: kvcache.MediumGPU}
}

func TestEncodeMatchesReferenceBytes(t *testing.T) {
	cleared := kvcache.Event{Kind: kvcache.AllBlocksCleared}
	parent := hashOf(42)
	cpu := kvcache.Event{
		Kind: kvcache.BlockStored, Hashes: []kvcache.Hash{hashOf(kvvectors.Hash1)}, Parent: &parent,
		Tokens: []uint32{}, BlockSize: 4, Medium: kvcache.MediumCPU,
	}
	tests := []struct {
		vec    kvvectors.Vector
		schema Schema
		ev     kvcache.Event
	}{
		{kvvectors.StoredMap(), Schema{Format: Map, StoredLen: 12}, capturedStored()},
		{kvvectors.RemovedArray(2), Schema{StoredLen: 6}, removed()},
		{kvvectors.RemovedArray(3), Schema{StoredLen: 9}, removed()},
		{kvvectors.RemovedArray(4), Schema{StoredLen: 12}, removed()},
		{kvvectors.RemovedMap(), Schema{Format: Map, StoredLen: 12}, removed()},
		{kvvectors.ClearedArray(), Schema{StoredLen: 12}, cleared},
		{kvvectors.ClearedMap(), Schema{Format: Map, StoredLen: 12}, cleared},
		{kvvectors.CPUStoredArray(), Schema{StoredLen: 12}, cpu},
		{kvvectors.LoRAStored(), Schema{StoredLen: 9}, loraSalted()},
	}
	for _, n := range StoredLengths {
		tests = append(tests, struct {
			vec    kvvectors.Vector
			schema Schema
			ev     kvcache.Event
		}{kvvectors.StoredArray(n), Schema{StoredLen: n}, capturedStored()})
	}
	for _, tt := range tests {
		t.Run(tt.vec.Name, func(t *testing.T) {
			tt.schema.IntHashes = true
			var buf bytes.Buffer
			if err := Encode(&buf, tt.schema, kvvectors.TS, []kvcache.Event{tt.ev}, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), tt.vec.Payload) {
				t.Errorf("payload\n got % x\nwant % x", buf.Bytes(), tt.vec.Payload)
			}
		})
	}
}

func TestEncodeByteHashes(t *testing.T) {
	var buf bytes.Buffer
	ev := removed()
	if err := Encode(&buf, Schema{StoredLen: 12}, kvvectors.TS, []kvcache.Event{ev}, 0); err != nil {
		t.Fatal(err)
	}
	// bin8 of 32 bytes, then the raw hash.
	want := append([]byte{0xc4, 32}, ev.Hashes[0][:]...)
	if !bytes.Contains(buf.Bytes(), want) {
		t.Errorf("payload % x lacks the 32-byte bin hash", buf.Bytes())
	}
}

func TestEncodeRejectsUnknownKind(t *testing.T) {
	var buf bytes.Buffer
	err := Encode(&buf, Schema{StoredLen: 12}, 0, []kvcache.Event{{Kind: "BlockMoved"}}, 0)
	if err == nil {
		t.Fatal("unknown kind encoded without error")
	}
}

func TestSchemaValidate(t *testing.T) {
	for _, n := range []int{0, 5, 11, 13} {
		if (Schema{StoredLen: n}).Validate() == nil {
			t.Errorf("schema length %d accepted", n)
		}
	}
	for _, n := range StoredLengths {
		if err := (Schema{StoredLen: n}).Validate(); err != nil {
			t.Errorf("schema length %d rejected: %v", n, err)
		}
	}
}

func TestEncodeLoRA(t *testing.T) {
	ev := capturedStored()
	ev.LoRAName, ev.LoRAID = "sql", 3
	ev.Extra = [][]string{{"sql"}, {"sql"}}
	var buf bytes.Buffer
	if err := Encode(&buf, Schema{StoredLen: 12, IntHashes: true}, kvvectors.TS, []kvcache.Event{ev}, 0); err != nil {
		t.Fatal(err)
	}
	// ... block_size 4, lora_id 3, "GPU", lora_name "sql", extra_keys [["sql"], ["sql"]] ...
	want := []byte{0x04, 0x03, 0xa3, 'G', 'P', 'U', 0xa3, 's', 'q', 'l', 0x92, 0x91, 0xa3, 's', 'q', 'l', 0x91, 0xa3, 's', 'q', 'l'}
	if !bytes.Contains(buf.Bytes(), want) {
		t.Errorf("payload % x lacks the LoRA fields % x", buf.Bytes(), want)
	}
}
