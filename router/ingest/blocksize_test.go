package ingest

import (
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

// TestBlockSizePublished: the block size an engine reports in its events
// is read without the Sink's lock, and a change of it publishes a new
// generation, so the replica set re-derives the modes that depend on it;
// an update that repeats it, or a driver that sends none, changes nothing.
func TestBlockSizePublished(t *testing.T) {
	s := NewSink(index.NewModels(index.Options{}), func(string) (string, bool) { return "m", true }, nil)
	update := func(seq uint64, snapshot bool, bs int) func() {
		return func() {
			s.ApplyUpdate(&kvwire.Update{Driver: "d1", Epoch: 1, Seq: seq, Snapshot: snapshot,
				Replicas: []kvwire.Replica{{ID: "a/1", BlockSize: bs, Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{seq + 1})}}}})
		}
	}
	steps := []struct {
		name    string
		do      func()
		changed bool
		want    int
	}{
		{"snapshot at 64 (FlashMLA)", update(0, true, 64), true, 64},
		{"delta at 64", update(1, false, 64), false, 64},
		{"delta without a size", update(2, false, 0), false, 64},
		{"delta at 272 (hybrid page alignment)", update(3, false, 272), true, 272},
		{"drop", func() { s.Drop("a/1") }, true, 0},
	}
	gen := s.SyncedGeneration()
	for _, st := range steps {
		st.do()
		if got := s.SyncedGeneration(); (got != gen) != st.changed {
			t.Errorf("%s: generation %d -> %d; want a change: %v", st.name, gen, got, st.changed)
		}
		gen = s.SyncedGeneration()
		if got := s.BlockSize("a/1"); got != st.want {
			t.Errorf("%s: BlockSize = %d; want %d", st.name, got, st.want)
		}
	}
}
