package ingest

import (
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/kvgroups"
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

// TestOffloadFactor: the offloaded block size a version 4 driver reports
// with every entry becomes the replica's offload factor in the layouts
// (offloaded blocks per GPU block), for a replica in the index and for
// one whose state was kept until Consul listed it; a driver that stops
// reporting it (an older version after a rollback) and a dropped replica
// forget it.
func TestOffloadFactor(t *testing.T) {
	reg := kvgroups.NewRegistry()
	known := map[string]bool{"a/1": true}
	s := NewSinkWith(index.NewModels(index.Options{}), func(id string) (string, bool) { return "m", known[id] }, Options{Layouts: reg})
	send := func(seq uint64, snapshot bool, id string, offload int) {
		s.ApplyUpdate(&kvwire.Update{Version: kvwire.Version, Driver: "d1", Epoch: 1, Seq: seq, Snapshot: snapshot,
			Replicas: []kvwire.Replica{{ID: id, BlockSize: 16, OffloadBlockSize: offload, Groups: []kvwire.Group{group(0, kvwire.TierCPU, []uint64{seq + 1})}}}})
	}
	steps := []struct {
		name    string
		do      func()
		replica string
		want    int
	}{
		{"snapshot offloading 64 over 16", func() { send(0, true, "a/1", 64) }, "a/1", 4},
		{"a delta without it", func() { send(1, false, "a/1", 0) }, "a/1", 0},
		{"a delta with it", func() { send(2, false, "a/1", 48) }, "a/1", 3},
		{"not a multiple", func() { send(3, false, "a/1", 40) }, "a/1", 0},
		{"again", func() { send(4, false, "a/1", 64) }, "a/1", 4},
		{"dropped", func() { s.Drop("a/1") }, "a/1", 0},
		{"kept before Consul lists it", func() { send(5, false, "b/1", 32) }, "b/1", 0},
		{"adopted when it joins", func() { known["b/1"] = true; s.Joined(Member{ID: "b/1", Model: "m"}) }, "b/1", 2},
	}
	for _, st := range steps {
		st.do()
		if got := reg.OffloadFactor(st.replica); got != st.want {
			t.Errorf("%s: offload factor of %s %d; want %d", st.name, st.replica, got, st.want)
		}
	}
}
