package intake

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// TestIntakeResumedAnnouncesIdleEngine: an intake opened beside a running
// engine (a plugin restart) learns the replica from the engine's replay.
// An engine that never published is announced holding nothing once the
// replay comes back empty; one whose buffer holds batches keeps its
// replayed blocks, with no reset sent.
func TestIntakeResumedAnnouncesIdleEngine(t *testing.T) {
	for _, tc := range []struct {
		name       string
		published  int // batches in the engine's replay buffer, none sent live
		wantResets int
	}{
		{"idle engine", 0, 1},
		{"engine with blocks", 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &askedSink{Store: kvevents.NewStore()}
			sess := s.Open()
			defer sess.Close()
			sess.Drain() // the first drain is a snapshot
			in, err := Open(Config{Replica: "r"}, s)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			e := startFakeEngine(t, in.EngineConfig().Endpoint, in.ReplayPort(), true)
			payloads, keys := chainPayloads(t, max(tc.published, 1), 10)
			for _, p := range payloads[:tc.published] {
				e.publish(p, true)
			}
			in.Resumed()
			poll.Until(t, "the replay to end", func() bool { return s.asked.Load() == 1 })
			if !slices.Contains(s.Replicas(), "r") {
				t.Errorf("store replicas %v; want r", s.Replicas())
			}
			if want := kvtest.SortBlocks(kvtest.GPU(0, keys[:tc.published]...)); !slices.Equal(s.Blocks("r"), want) {
				t.Errorf("blocks %v; want %v", s.Blocks("r"), want)
			}
			if resets := countDrain(sess.Drain()); resets != tc.wantResets {
				t.Errorf("%d resets sent; want %d", resets, tc.wantResets)
			}
		})
	}
}

// askedSink is a Store counting AnnounceIfUnknown calls.
type askedSink struct {
	*kvevents.Store
	asked atomic.Int32
}

func (a *askedSink) AnnounceIfUnknown(replica string) bool {
	defer a.asked.Add(1)
	return a.Store.AnnounceIfUnknown(replica)
}

// countDrain counts a drain's resets.
func countDrain(d kvevents.Drained) (resets int) {
	for _, r := range d.Replicas {
		if r.Reset {
			resets++
		}
	}
	return resets
}
