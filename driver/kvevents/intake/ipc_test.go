package intake

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	zmq "github.com/pebbe/zmq4"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// TestRankEndpoint pins the endpoints vLLM's offset_endpoint_port derives
// (vllm/distributed/kv_events.py, docs/VLLM_PARITY.md): "_dp{r}" appended
// to an endpoint containing "inproc", the port plus r for a tcp one.
func TestRankEndpoint(t *testing.T) {
	tests := []struct {
		endpoint string
		rank     int
		want     string
	}{
		{"ipc:///a/llmgw-kv/inproc-events", 0, "ipc:///a/llmgw-kv/inproc-events"},
		{"ipc:///a/llmgw-kv/inproc-events", 1, "ipc:///a/llmgw-kv/inproc-events_dp1"},
		{"ipc:///a/llmgw-kv/inproc-replay", 12, "ipc:///a/llmgw-kv/inproc-replay_dp12"},
		{"tcp://127.0.0.1:5557", 0, "tcp://127.0.0.1:5557"},
		{"tcp://127.0.0.1:5557", 3, "tcp://127.0.0.1:5560"},
		{"", 2, ""},
	}
	for _, tt := range tests {
		if got := RankEndpoint(tt.endpoint, tt.rank); got != tt.want {
			t.Errorf("RankEndpoint(%q, %d) = %q; want %q", tt.endpoint, tt.rank, got, tt.want)
		}
	}
	events, replay := IPCEndpoints("/a/llmgw-kv")
	for _, ep := range []string{events, replay} {
		// vLLM's substring test; without it rank 1 raises ValueError.
		if !strings.Contains(ep, "inproc") {
			t.Errorf("endpoint %q holds no \"inproc\": vLLM cannot derive data-parallel ranks from it", ep)
		}
	}
}

func TestCheckIPCDir(t *testing.T) {
	// "/inproc-replay" is 14 bytes, "_dp1" 4 and "_dp10" 5.
	fits := "/" + strings.Repeat("d", MaxSocketPath-1-14-4)
	tests := []struct {
		dir  string
		dp   int
		fits bool
	}{
		{fits, 1, true},
		{fits, 2, true},
		{fits, 11, false}, // rank 10's "_dp10" is one byte over
		{fits + "d", 2, false},
		{"relative/dir", 1, false},
	}
	for _, tt := range tests {
		if err := CheckIPCDir(tt.dir, tt.dp); (err == nil) != tt.fits {
			t.Errorf("CheckIPCDir(%d bytes, dp %d) = %v; want fits %v", len(tt.dir), tt.dp, err, tt.fits)
		}
	}
}

// startBoundEngine plays a vLLM engine given ipc:// endpoints: it binds its
// XPUB and replay ROUTER there, and the listener connects.
func startBoundEngine(t *testing.T, endpoint, replay string) *fakeEngine {
	t.Helper()
	zctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	e := &fakeEngine{t: t, zctx: zctx, newFormat: true, done: make(chan struct{})}
	if e.pub, err = zctx.NewSocket(zmq.XPUB); err != nil {
		t.Fatal(err)
	}
	must(t, e.pub.SetLinger(0))
	must(t, e.pub.SetXpubVerbose(1))
	must(t, e.pub.Bind(endpoint))
	router, err := zctx.NewSocket(zmq.ROUTER)
	if err != nil {
		t.Fatal(err)
	}
	must(t, router.SetLinger(0))
	must(t, router.Bind(replay))
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go e.serveReplay(ctx, router)
	t.Cleanup(e.stop)
	e.awaitSubscriber()
	return e
}

// TestIntakeIPC: with a socket directory the engine's config names ipc://
// endpoints, each rank's listener connects to its rank's socket, a gap is
// repaired by replay over the rank's replay socket, and a listener
// reconnects by itself to an engine that binds the same path again.
func TestIntakeIPC(t *testing.T) {
	s := kvevents.NewStore()
	dir := t.TempDir()
	in, err := Open(Config{Replica: "r", DataParallelSize: 2, Dir: dir}, s)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var cfg map[string]any
	if err := json.Unmarshal([]byte(in.EngineFlag()), &cfg); err != nil {
		t.Fatal(err)
	}
	events, replay := IPCEndpoints(dir)
	if cfg["endpoint"] != events || cfg["replay_endpoint"] != replay || in.Port() != 0 || in.Dir() != dir {
		t.Errorf("engine config %v, port %d, dir %q; want ipc endpoints in %s", cfg, in.Port(), in.Dir(), dir)
	}
	payloads, keys := chainPayloads(t, 3, 10)
	var engines []*fakeEngine
	for rank := range 2 {
		e := startBoundEngine(t, RankEndpoint(events, rank), RankEndpoint(replay, rank))
		e.publish(payloads[0], false)
		e.publish(payloads[1], true) // lost live: replay repairs it
		e.publish(payloads[2], false)
		engines = append(engines, e)
	}
	want := kvtest.SortBlocks(append(kvtest.GPU(0, keys...), kvtest.GPU(1, keys...)...))
	poll.Until(t, "both ranks' blocks", func() bool { return slices.Equal(s.Blocks("r"), want) })
	for rank, st := range in.Stats() {
		if st.Replayed == 0 || st.Lost != 0 {
			t.Errorf("rank %d stats %+v; want the gap replayed", rank, st)
		}
	}

	// The engine restarts: its socket is bound anew at the same path.
	engines[1].stop()
	in.EngineRestarted()
	e := startBoundEngine(t, RankEndpoint(events, 1), RankEndpoint(replay, 1))
	more, moreKeys := chainPayloads(t, 1, 50)
	e.publish(more[0], false)
	poll.Until(t, "the restarted engine's block", func() bool {
		return slices.Equal(s.Blocks("r"), kvtest.GPU(1, moreKeys...))
	})
}

// TestIntakeIPCPathTooLong: a socket directory whose longest path would not
// fit a Unix socket address is refused, with the reason.
func TestIntakeIPCPathTooLong(t *testing.T) {
	dir := "/" + strings.Repeat("x", MaxSocketPath)
	_, err := Open(Config{Replica: "r", Dir: dir}, kvevents.NewStore())
	if err == nil || !strings.Contains(err.Error(), "over the 107") {
		t.Fatalf("Open with a %d-byte directory: %v; want the path refused as too long", len(dir), err)
	}
}
