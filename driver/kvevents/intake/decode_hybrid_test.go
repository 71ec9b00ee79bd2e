package intake

import (
	"testing"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/internal/testkit/kvvectors"
)

// TestDecodeHybridVectors reads a hybrid model's events (group 1 of a
// sliding-window or Mamba layout, null blocks skipped) as vLLM sends them:
// a store whose token_ids span null blocks its block_hashes skip is
// delivered, not dropped as inconsistent.
func TestDecodeHybridVectors(t *testing.T) {
	for _, v := range kvvectors.Hybrid() {
		t.Run(v.Name, func(t *testing.T) {
			var d Decoder
			b, err := d.Decode(v.Payload)
			if err != nil {
				t.Fatalf("Decode: %v", err)
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

// FuzzDecodeHybrid mutates the hybrid vectors: every group field, in both
// encodings. The decoder must never panic, and what it accepts must keep
// group_idx in range.
func FuzzDecodeHybrid(f *testing.F) {
	for _, v := range kvvectors.Hybrid() {
		f.Add(v.Payload)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var d Decoder
		b, err := d.Decode(payload)
		if err != nil {
			return
		}
		for _, e := range b.Events {
			if e.GroupIdx < 0 {
				t.Fatalf("negative group_idx %d accepted", e.GroupIdx)
			}
		}
	})
}

// TestCheckStoredSpan pins what a GPU BlockStored's token_ids may span:
// whole blocks, at least one per hash (more where null blocks were
// skipped), never fewer or a partial block.
func TestCheckStoredSpan(t *testing.T) {
	for _, tc := range []struct {
		name           string
		hashes, tokens int
		ok             bool
	}{
		{"one block per hash", 2, 8, true},
		{"null blocks skipped", 1, 12, true},
		{"null blocks only", 0, 8, true},
		{"fewer blocks than hashes", 3, 8, false},
		{"a partial block", 1, 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := kvevents.Event{Type: kvevents.BlockStored, Hashes: make([]uint64, tc.hashes), Tokens: make([]uint32, tc.tokens), BlockSize: 4}
			if err := check(&ev); (err == nil) != tc.ok {
				t.Errorf("check: %v; want ok %v", err, tc.ok)
			}
		})
	}
}
