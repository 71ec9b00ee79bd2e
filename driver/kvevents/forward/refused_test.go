package forward

import (
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
)

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestForwarderRefusedThenResent runs the real forwarder against the
// router's real ingest (kvwire's Receiver over router/ingest's Sink) with
// an index capped at 6 keys. Of two replicas of 4 blocks each, one is
// refused: the driver's status names it, the router routes it approx
// (not synced) and holds none of its blocks. Once the other replica's
// blocks leave, the router asks for a snapshot (409) and the refused
// replica's state, which the driver kept, arrives whole.
func TestForwarderRefusedThenResent(t *testing.T) {
	clock := &testClock{now: time.Unix(1000, 0)}
	models := index.NewModels(index.Options{MaxKeys: 6})
	sink := ingest.NewSinkWith(models, func(string) (string, bool) { return "m", true }, ingest.Options{Now: clock.Now})
	rec, err := kvwire.NewReceiver("secret", sink)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)

	s := kvevents.NewStore()
	tk := kvtest.Toks(0, 64)
	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{1, 2, 3, 4}, nil, tk[:16], 4))
	kvtest.Apply(s, "b", 0, kvtest.Stored([]uint64{11, 12, 13, 14}, nil, tk[16:32], 4))
	f, err := Start(s, newStaticRouters(RouterEndpoint{ID: "r1", URL: srv.URL}), Config{
		DriverID: "node-1", Token: "secret", FlushInterval: 10 * time.Millisecond, KeepAlive: 20 * time.Millisecond,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)

	var refused, kept string
	poll.Until(t, "the driver to learn of a refusal", func() bool {
		st := first(f)
		if len(st.Refused) != 1 {
			return false
		}
		refused = st.Refused[0].Replica
		return true
	})
	kept = map[string]string{"a": "b", "b": "a"}[refused]
	if why, ok := sink.Refused(refused); !ok || why == "" {
		t.Errorf("sink.Refused(%s) = %q, %v; want a reason", refused, why, ok)
	}
	if sink.Synced(refused) {
		t.Errorf("refused replica %s reported synced (exact mode)", refused)
	}
	if gpu, _ := models.For("m").ReplicaBlocks(refused); gpu != 0 {
		t.Errorf("index holds %d blocks of the refused replica; want 0", gpu)
	}
	if gpu, _ := models.For("m").ReplicaBlocks(kept); gpu != 4 || !sink.Synced(kept) {
		t.Errorf("replica %s: %d blocks, synced %v; want 4, true", kept, gpu, sink.Synced(kept))
	}

	// Room frees: the kept replica's blocks leave; past the refusal's
	// backoff the router asks for the snapshot.
	s.Remove(kept)
	clock.advance(time.Minute)
	poll.Until(t, "the refused replica's state to arrive", func() bool {
		gpu, _ := models.For("m").ReplicaBlocks(refused)
		return gpu == 4 && sink.Synced(refused)
	})
	if _, ok := sink.Refused(refused); ok {
		t.Errorf("replica %s still refused after its snapshot fit", refused)
	}
	poll.Until(t, "the driver's status to clear", func() bool { return len(first(f).Refused) == 0 })
	// The router applies a snapshot before it answers, and the forwarder
	// counts a send once the answer is back: wait for the count rather
	// than read it once (under load the read can fall in between).
	poll.Until(t, "the driver to count the snapshot the router asked for", func() bool { return first(f).Snapshots >= 2 })
}
