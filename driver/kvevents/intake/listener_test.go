package intake

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// TestMain removes a vllm-sim built for this run and checks that no test
// left a goroutine behind.
func TestMain(m *testing.M) {
	code := m.Run()
	sims.Remove()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// chainPayloads returns n batches that store a chain of n blocks of size 4,
// one block per batch, and the keys of that chain.
func chainPayloads(t *testing.T, n int, firstHash uint64) ([][]byte, []blockkey.Key) {
	t.Helper()
	tk := kvtest.Toks(int(firstHash)*1000, 4*n)
	keys := blockkey.Keys(nil, blockkey.Root(""), tk, 4)
	var out [][]byte
	for i := range n {
		var parent *uint64
		if i > 0 {
			parent = kvtest.U64(firstHash + uint64(i) - 1)
		}
		out = append(out, storedPayload(t, []uint64{firstHash + uint64(i)}, parent, tk[4*i:4*i+4], 4))
	}
	return out, keys
}

func listen(t *testing.T, cfg ListenerConfig, sink Sink) *Listener {
	t.Helper()
	if cfg.Replica == "" {
		cfg.Replica = "r"
	}
	l, err := Listen(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestListenerAppliesLiveBatches(t *testing.T) {
	s := kvevents.NewStore()
	l := listen(t, ListenerConfig{}, s)
	e := startFakeEngine(t, l.Endpoint(), 0, true)
	payloads, keys := chainPayloads(t, 3, 10)
	for _, p := range payloads {
		e.publish(p, false)
	}
	poll.Until(t, "three batches", func() bool { return l.Stats().LastSeq == 2 })
	if got, want := s.Blocks("r"), kvtest.GPU(0, keys...); !slices.Equal(got, kvtest.SortBlocks(want)) {
		t.Errorf("blocks %v; want %v", got, want)
	}
	if st := l.Stats(); st.Batches != 3 || st.Lost != 0 || st.Gaps != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestListenerRepairsGapsByReplay(t *testing.T) {
	for _, newFormat := range []bool{false, true} {
		name := "old replies"
		if newFormat {
			name = "new replies"
		}
		t.Run(name, func(t *testing.T) {
			s := kvevents.NewStore()
			replay := netport.FreeTCP(t)
			l := listen(t, ListenerConfig{ReplayEndpoint: "tcp://127.0.0.1:" + itoa(replay)}, s)
			e := startFakeEngine(t, l.Endpoint(), replay, newFormat)
			payloads, keys := chainPayloads(t, 5, 10)
			e.publish(payloads[0], false)
			e.publish(payloads[1], true) // lost on purpose
			e.publish(payloads[2], true)
			e.publish(payloads[3], false)
			e.publish(removedPayload(t, 10), false)
			e.publish(payloads[4], false)
			poll.Until(t, "all batches", func() bool { return l.Stats().LastSeq == 5 })
			want := kvtest.GPU(0, keys[1:]...)
			if got := s.Blocks("r"); !slices.Equal(got, kvtest.SortBlocks(want)) {
				t.Errorf("blocks %v; want %v", got, want)
			}
			st := l.Stats()
			if st.Gaps != 1 || st.Lost != 0 || st.Replayed < 2 || st.ReplayFails != 0 {
				t.Errorf("stats %+v; want one gap repaired by replay", st)
			}
		})
	}
}

func TestListenerCountsLossWithoutReplay(t *testing.T) {
	s := kvevents.NewStore()
	l := listen(t, ListenerConfig{}, s)
	e := startFakeEngine(t, l.Endpoint(), 0, true)
	payloads, keys := chainPayloads(t, 3, 10)
	e.publish(payloads[0], false)
	e.publish(payloads[1], true)
	e.publish(payloads[2], false)
	poll.Until(t, "last batch", func() bool { return l.Stats().LastSeq == 2 })
	if st := l.Stats(); st.Lost != 1 || st.Gaps != 1 {
		t.Errorf("stats %+v; want one lost batch", st)
	}
	// Block 2's parent was never seen: it must not be published under a
	// wrong key.
	if got, want := s.Blocks("r"), kvtest.GPU(0, keys[0]); !slices.Equal(got, want) {
		t.Errorf("blocks %v; want %v", got, want)
	}
}

// TestListenerEngineRestart: the sequence going backwards means a new
// engine; the old engine's blocks are cleared first.
func TestListenerEngineRestart(t *testing.T) {
	s := kvevents.NewStore()
	replay := netport.FreeTCP(t)
	l := listen(t, ListenerConfig{ReplayEndpoint: "tcp://127.0.0.1:" + itoa(replay)}, s)
	e1 := startFakeEngine(t, l.Endpoint(), replay, true)
	old, _ := chainPayloads(t, 3, 10)
	for _, p := range old {
		e1.publish(p, false)
	}
	poll.Until(t, "first engine's batches", func() bool { return l.Stats().LastSeq == 2 })
	e1.stop()

	e2 := startFakeEngine(t, l.Endpoint(), replay, true)
	fresh, keys := chainPayloads(t, 2, 50)
	e2.publish(fresh[0], true) // lost live, recovered by replay from 0
	e2.publish(fresh[1], false)
	poll.Until(t, "restart handled", func() bool { st := l.Stats(); return st.Restarts == 1 && st.LastSeq == 1 })
	if got, want := s.Blocks("r"), kvtest.GPU(0, keys...); !slices.Equal(got, kvtest.SortBlocks(want)) {
		t.Errorf("blocks %v; want only the new engine's %v", got, want)
	}
}

// TestListenerRestartOnSamePort closes the listener while the engine keeps
// running and opens a new one (a fresh store, as after a plugin restart) on
// the same port: the engine reconnects by itself and replay from 0 restores
// the blocks published while no listener was there.
func TestListenerRestartOnSamePort(t *testing.T) {
	replay := netport.FreeTCP(t)
	cfg := ListenerConfig{ReplayEndpoint: "tcp://127.0.0.1:" + itoa(replay)}
	s1 := kvevents.NewStore()
	l1, err := Listen(cfg, s1)
	if err != nil {
		t.Fatal(err)
	}
	e := startFakeEngine(t, l1.Endpoint(), replay, false)
	payloads, keys := chainPayloads(t, 4, 10)
	e.publish(payloads[0], false)
	poll.Until(t, "first batch", func() bool { return l1.Stats().LastSeq == 0 })
	if err := l1.Close(); err != nil {
		t.Fatal(err)
	}
	e.publish(payloads[1], false) // nobody listening
	e.publish(payloads[2], false)

	cfg.Port = l1.Port()
	s2 := kvevents.NewStore()
	l2 := listen(t, cfg, s2)
	e.awaitSubscriber()
	e.publish(payloads[3], false)
	poll.Until(t, "catch-up", func() bool { return l2.Stats().LastSeq == 3 })
	if got, want := s2.Blocks("r"), kvtest.GPU(0, keys...); !slices.Equal(got, kvtest.SortBlocks(want)) {
		t.Errorf("blocks %v; want %v", got, want)
	}
}

func TestListenerSkipsBadMessages(t *testing.T) {
	s := kvevents.NewStore()
	l := listen(t, ListenerConfig{}, s)
	e := startFakeEngine(t, l.Endpoint(), 0, true)
	if _, err := e.pub.SendMessage("kv@test", "short"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pub.SendMessage("kv@test", "seq", "x"); err != nil {
		t.Fatal(err)
	}
	e.publish([]byte{0xc1}, false)
	payloads, keys := chainPayloads(t, 1, 10)
	e.publish(payloads[0], false)
	poll.Until(t, "good batch", func() bool { return l.Stats().LastSeq == 1 })
	st := l.Stats()
	if st.BadFrames != 2 || st.Malformed != 1 || st.Batches != 1 || st.Lost != 0 {
		t.Errorf("stats %+v; want 2 bad frames, 1 malformed, 1 batch", st)
	}
	if got := s.Blocks("r"); !slices.Equal(got, kvtest.GPU(0, keys...)) {
		t.Errorf("blocks %v", got)
	}
}

func TestListenPortInUse(t *testing.T) {
	l := listen(t, ListenerConfig{}, kvevents.NewStore())
	if _, err := Listen(ListenerConfig{Replica: "x", Port: l.Port()}, kvevents.NewStore()); err == nil {
		t.Fatal("second bind on the same port succeeded")
	}
}

func itoa(n int) string { return string(appendInt(nil, n)) }

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// TestListenerReplayCooldown: with a replay endpoint nobody serves, the
// first gap costs one idle timeout, and the next gap inside the cooldown is
// counted as lost without another wait.
func TestListenerReplayCooldown(t *testing.T) {
	s := kvevents.NewStore()
	l := listen(t, ListenerConfig{
		ReplayEndpoint: "tcp://127.0.0.1:" + itoa(netport.FreeTCP(t)),
		ReplayIdle:     50 * time.Millisecond, ReplayCooldown: time.Hour,
	}, s)
	e := startFakeEngine(t, l.Endpoint(), 0, true)
	payloads, _ := chainPayloads(t, 5, 10)
	e.publish(payloads[0], false)
	e.publish(payloads[1], true)
	e.publish(payloads[2], false)
	e.publish(payloads[3], true)
	e.publish(payloads[4], false)
	poll.Until(t, "last batch", func() bool { return l.Stats().LastSeq == 4 })
	if st := l.Stats(); st.ReplayFails != 1 || st.Lost != 2 || st.Gaps != 2 {
		t.Errorf("stats %+v; want 1 failed replay, then 2 lost batches without retrying", st)
	}
}

// TestListenerEngineRestartedByDriver: the driver knows it replaced the
// engine, even when the new engine's sequence numbers look like a
// continuation of the old one's.
func TestListenerEngineRestartedByDriver(t *testing.T) {
	s := kvevents.NewStore()
	l := listen(t, ListenerConfig{}, s)
	e := startFakeEngine(t, l.Endpoint(), 0, true)
	old, _ := chainPayloads(t, 2, 10)
	for _, p := range old {
		e.publish(p, false)
	}
	poll.Until(t, "old engine's batches", func() bool { return l.Stats().LastSeq == 1 })
	l.EngineRestarted()
	poll.Until(t, "restart handled", func() bool { return len(s.Blocks("r")) == 0 })
	if st := l.Stats(); st.Announced != 1 || st.Restarts != 0 {
		t.Errorf("stats %+v; want 1 announced restart and none seen", st)
	}
	fresh, keys := chainPayloads(t, 1, 50)
	e.seq = 0 // the new engine counts from 0 again
	e.publish(fresh[0], false)
	poll.Until(t, "new engine's batch", func() bool { return l.Stats().LastSeq == 0 && len(s.Blocks("r")) == 1 })
	if got := s.Blocks("r"); !slices.Equal(got, kvtest.GPU(0, keys...)) {
		t.Errorf("blocks %v; want %v", got, keys)
	}
}

// TestListenerCatchesUpWhenQuiet: batches lost with no later live batch to
// reveal the gap (ZMQ's slow joiner drops an engine's first batches) are
// fetched by replay once the stream has been quiet for CatchUpEvery.
func TestListenerCatchesUpWhenQuiet(t *testing.T) {
	s := kvevents.NewStore()
	replay := netport.FreeTCP(t)
	l := listen(t, ListenerConfig{ReplayEndpoint: "tcp://127.0.0.1:" + itoa(replay), CatchUpEvery: 50 * time.Millisecond}, s)
	e := startFakeEngine(t, l.Endpoint(), replay, true)
	payloads, keys := chainPayloads(t, 2, 10)
	e.publish(payloads[0], true) // both lost, and nothing follows
	e.publish(payloads[1], true)
	poll.Until(t, "the quiet listener to catch up", func() bool { return l.Stats().LastSeq == 1 })
	if got, want := s.Blocks("r"), kvtest.GPU(0, keys...); !slices.Equal(got, kvtest.SortBlocks(want)) {
		t.Errorf("blocks %v; want %v", got, want)
	}
	if st := l.Stats(); st.Replayed != 2 || st.Lost != 0 || st.ReplayFails != 0 {
		t.Errorf("stats %+v; want both batches replayed", st)
	}
}

// heldSink is a Store whose Apply waits until released: the listener's
// goroutine is held inside it.
type heldSink struct {
	*kvevents.Store
	entered chan struct{}
	release chan struct{}
}

func (h *heldSink) Apply(replica string, rank int, b *kvevents.Batch) {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-h.release
	h.Store.Apply(replica, rank, b)
}

// TestEngineRestartedCountedAtOnce: the driver takes a new engine's
// baseline counters right after starting it, and a fast engine is ready
// before the listener's goroutine gets round to the reset. With that
// goroutine held busy, EngineRestarted must already be counted when it
// returns, and once the goroutine has handled it, it must not count as a
// restart the listener saw: only those are reported as the engine's own.
func TestEngineRestartedCountedAtOnce(t *testing.T) {
	s := &heldSink{Store: kvevents.NewStore(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	l := listen(t, ListenerConfig{}, s)
	e := startFakeEngine(t, l.Endpoint(), 0, true)
	old, _ := chainPayloads(t, 1, 10)
	e.publish(old[0], false)
	<-s.entered // the goroutine is inside Apply now

	l.EngineRestarted()
	st := l.Stats()
	close(s.release)
	if st.Announced != 1 || st.Restarts != 0 {
		t.Errorf("stats right after EngineRestarted %+v; want it counted as announced, not as a restart", st)
	}
	poll.Until(t, "the old batch applied, then the reset", func() bool {
		return s.Stats().Stored == 1 && l.Stats().LastSeq == -1 && len(s.Blocks("r")) == 0
	})
	fresh, keys := chainPayloads(t, 1, 50)
	e.seq = 0
	e.publish(fresh[0], false)
	poll.Until(t, "the new engine's batch", func() bool { return l.Stats().LastSeq == 0 })
	if st := l.Stats(); st.Restarts != 0 || st.Announced != 1 {
		t.Errorf("stats %+v; want the announced restart only", st)
	}
	if got := s.Blocks("r"); !slices.Equal(got, kvtest.GPU(0, keys...)) {
		t.Errorf("blocks %v; want the new engine's %v", got, keys)
	}
}
