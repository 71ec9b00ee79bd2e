package intake

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/forward"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// groundTruth turns vllm-sim's dump into canonical blocks. Keys chain over
// each block's parent; known remembers engine hash -> key across dumps, so a
// block whose parent was evicted before it (and so is missing from the dump)
// still resolves if an earlier dump saw its chain. ok is false when a block
// cannot be resolved yet.
func groundTruth(p *simProcess, known map[uint64]blockkey.Key) (blocks []kvevents.Block, ok bool) {
	dump := p.dump()
	byHash := map[uint64]simproc.Block{}
	for _, b := range dump {
		if len(b.TokenIDs) > 0 {
			byHash[b.Hash] = b
		}
	}
	var resolve func(h uint64, depth int) (blockkey.Key, bool)
	resolve = func(h uint64, depth int) (blockkey.Key, bool) {
		if k, ok := known[h]; ok {
			return k, true
		}
		b, ok := byHash[h]
		if !ok || depth > 10_000 {
			return 0, false
		}
		parent := blockkey.Root("")
		if b.Parent != nil {
			if parent, ok = resolve(*b.Parent, depth+1); !ok {
				return 0, false
			}
		}
		k := blockkey.Chain(parent, b.TokenIDs, nil)
		known[h] = k
		return k, true
	}
	ok = true
	seen := map[kvevents.Block]bool{}
	for _, b := range dump {
		k, found := resolve(b.Hash, 0)
		if !found {
			ok = false
			continue
		}
		tier := kvwire.TierGPU
		if b.Medium == "CPU" {
			tier = kvwire.TierCPU
		}
		blk := kvevents.Block{Rank: b.DPRank, Tier: tier, Key: k}
		if !seen[blk] {
			seen[blk] = true
			blocks = append(blocks, blk)
		}
	}
	return kvtest.SortBlocks(blocks), ok
}

// workload runs prompts, learning each block's key from a dump after every
// request so that later evictions cannot orphan it.
func workload(p *simProcess, known map[uint64]blockkey.Key, ps []string) {
	for _, pr := range ps {
		p.complete(pr)
		groundTruth(p, known)
	}
}

// concurrentWorkload runs prompts four at a time, learning keys after each
// group.
func concurrentWorkload(p *simProcess, known map[uint64]blockkey.Key, ps []string) {
	for len(ps) > 0 {
		n := min(4, len(ps))
		errs := make(chan error, n)
		for _, pr := range ps[:n] {
			go func() { errs <- p.tryComplete(pr) }()
		}
		for range n {
			if err := <-errs; err != nil {
				p.t.Fatal(err)
			}
		}
		groundTruth(p, known)
		ps = ps[n:]
	}
}

// assertMatches waits until the store's blocks for replica equal the
// simulator's ground truth.
func assertMatches(t *testing.T, what string, p *simProcess, s *kvevents.Store, replica string, known map[uint64]blockkey.Key) {
	t.Helper()
	var got, want []kvevents.Block
	var resolved bool
	defer func() {
		t.Logf("%s: %d blocks match; apply stats %+v", what, len(got), s.Stats())
	}()
	if poll.Within(poll.Timeout, func() bool {
		want, resolved = groundTruth(p, known)
		got = s.Blocks(replica)
		return resolved && slices.Equal(got, want)
	}) {
		return
	}
	t.Fatalf("%s: store holds %d blocks, simulator %d (all resolved: %v); differences: %s",
		what, len(got), len(want), resolved, diffBlocks(got, want))
}

func diffBlocks(got, want []kvevents.Block) string {
	g, w := map[kvevents.Block]bool{}, map[kvevents.Block]bool{}
	for _, b := range got {
		g[b] = true
	}
	for _, b := range want {
		w[b] = true
	}
	var out []string
	for b := range g {
		if !w[b] && len(out) < 5 {
			out = append(out, fmt.Sprintf("extra %+v", b))
		}
	}
	for b := range w {
		if !g[b] && len(out) < 10 {
			out = append(out, fmt.Sprintf("missing %+v", b))
		}
	}
	return fmt.Sprint(out)
}

// TestEndToEndWithSim runs vllm-sim publishing to an Intake and checks the
// replica state against the simulator's ground truth after a workload, after
// batches dropped on purpose (repaired by replay), after the listener
// restarts on the same port while the simulator runs, and after the
// simulator restarts. A Forwarder carries the state to a router over HTTP
// throughout.
func TestEndToEndWithSim(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	const replica = "alloc-1/main"
	s := kvevents.NewStore()
	in, err := Open(Config{Replica: replica}, s)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }()
	simArgs := []string{"--block-size", "16", "--num-gpu-blocks-override", "48", "--max-model-len", "512",
		"--sim-cpu-offload-blocks", "32", "--kv-events-config", in.EngineFlag()}
	p := startSim(t, simArgs...)
	known := map[uint64]blockkey.Key{}

	router := kvtest.StartRouter(t, "secret")
	f, err := forward.Start(s, oneRouter{ID: "r1", URL: router.URL()}, forward.Config{
		DriverID: "node-1", Token: "secret", FlushInterval: 10 * time.Millisecond,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	workload(p, known, prompts(30, 0))
	assertMatches(t, "after the workload", p, s, replica, known)
	if st := s.Stats(); st.Stored == 0 || st.Removed == 0 {
		t.Errorf("apply stats %+v; want stores and evictions", st)
	}
	kvtest.WaitMirror(t, router, "node-1", s, replica)

	// A router keys a prompt from its tokens alone; right after the request
	// the replica must hold every full block of it under those keys.
	last := prompts(30, 0)[29]
	var tok struct {
		Tokens []uint32 `json:"tokens"`
	}
	p.post("/tokenize", map[string]any{"model": "sim-model", "prompt": last}, &tok)
	p.complete(last)
	keys := blockkey.PromptKeys(nil, "", "", tok.Tokens, 16)
	if len(keys) < 2 {
		t.Fatalf("prompt of %d tokens gives %d blocks; want a longer prompt", len(tok.Tokens), len(keys))
	}
	poll.Until(t, "the prompt's blocks", func() bool {
		held := map[blockkey.Key]bool{}
		for _, b := range s.Blocks(replica) {
			if b.Tier == kvwire.TierGPU {
				held[b.Key] = true
			}
		}
		for _, k := range keys {
			if !held[k] {
				return false
			}
		}
		return true
	})

	// (a) Batches lost on purpose, repaired by replay.
	p.post("/debug/kv/drop", map[string]int{"batches": 3}, nil)
	workload(p, known, prompts(10, 1))
	assertMatches(t, "after dropped batches", p, s, replica, known)
	if st := in.Stats()[0]; st.Gaps == 0 || st.Replayed == 0 || st.Lost != 0 {
		t.Errorf("listener stats %+v; want a gap repaired by replay", st)
	}
	kvtest.WaitMirror(t, router, "node-1", s, replica)

	// AllBlocksCleared from /reset_prefix_cache.
	p.post("/reset_prefix_cache", map[string]any{}, nil)
	assertMatches(t, "after reset_prefix_cache", p, s, replica, known)
	if st := s.Stats(); st.Cleared == 0 {
		t.Errorf("apply stats %+v; want AllBlocksCleared applied", st)
	}
	workload(p, known, prompts(6, 6))
	assertMatches(t, "after reset and more work", p, s, replica, known)

	// (c) The listener restarts on the same port (a fresh store, as after a
	// plugin restart) while the simulator keeps running.
	port, replayPort := in.Port(), in.ReplayPort()
	_ = in.Close()
	f.Close()
	workload(p, known, prompts(5, 2))
	s = kvevents.NewStore()
	in, err = Open(Config{Replica: replica, Port: port, ReplayPort: replayPort}, s)
	if err != nil {
		t.Fatalf("reopen on port %d: %v", port, err)
	}
	workload(p, known, prompts(5, 3))
	assertMatches(t, "after the listener restarted", p, s, replica, known)

	// (b) The simulator restarts: its sequence starts again at 0, and the
	// old engine's blocks must go.
	p.stop()
	p = startSim(t, simArgs...)
	workload(p, known, prompts(12, 4))
	assertMatches(t, "after the simulator restarted", p, s, replica, known)
	if st := in.Stats()[0]; st.Restarts == 0 {
		t.Errorf("listener stats %+v; want a restart detected", st)
	}
}

// oneRouter is a router set that never changes.
type oneRouter forward.RouterEndpoint

func (oneRouter) Changed() <-chan struct{} { return nil }

func (r oneRouter) Current() []forward.RouterEndpoint {
	return []forward.RouterEndpoint{forward.RouterEndpoint(r)}
}

// TestEndToEndFormatsAndRanks runs shorter workloads against vllm-sim in
// other wire variants: map-encoded events with old-style replay replies,
// the oldest array schema, and two data-parallel ranks, over loopback TCP
// and over ipc:// sockets that the engine binds, each with a drop repaired
// by replay.
func TestEndToEndFormatsAndRanks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	tests := []struct {
		name  string
		ranks int
		ipc   bool
		args  []string
	}{
		{"map events, old replay replies", 1, false, []string{"--sim-event-format=map", "--sim-replay-format=old"}},
		{"array schema 6", 1, false, []string{"--sim-event-format=array", "--sim-event-schema=6"}},
		// The simulator sends each request to the least-loaded rank, so this
		// case runs with latency on and requests four at a time.
		{"array schema 9, two ranks", 2, false, []string{"--sim-event-schema=9", "--data-parallel-size", "2",
			"--sim-latency=true", "--sim-overhead", "20ms", "--sim-inter-token-latency", "2ms"}},
		{"ipc sockets, two ranks", 2, true, []string{"--data-parallel-size", "2",
			"--sim-latency=true", "--sim-overhead", "20ms", "--sim-inter-token-latency", "2ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const replica = "alloc-2/main"
			s := kvevents.NewStore()
			cfg := Config{Replica: replica, DataParallelSize: tt.ranks}
			if tt.ipc {
				cfg.Dir = t.TempDir()
			}
			in, err := Open(cfg, s)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = in.Close() }()
			args := append([]string{"--block-size", "16", "--num-gpu-blocks-override", "40", "--max-model-len", "512",
				"--kv-events-config", in.EngineFlag()}, tt.args...)
			p := startSim(t, args...)
			known := map[uint64]blockkey.Key{}
			run := workload
			if tt.ranks > 1 {
				run = concurrentWorkload
			}
			run(p, known, prompts(12, 0))
			p.post("/debug/kv/drop", map[string]int{"batches": 2}, nil)
			run(p, known, prompts(12, 5))
			assertMatches(t, tt.name, p, s, replica, known)
			ranks := map[int]bool{}
			for _, b := range s.Blocks(replica) {
				ranks[b.Rank] = true
			}
			if len(ranks) != tt.ranks {
				t.Errorf("blocks on ranks %v; want %d ranks", ranks, tt.ranks)
			}
			if tt.ipc {
				assertSockets(t, cfg.Dir, tt.ranks)
			}
			var replayed uint64
			for _, st := range in.Stats() {
				replayed += st.Replayed
				if st.Lost != 0 {
					t.Errorf("lost batches: %+v", st)
				}
			}
			if replayed == 0 {
				t.Error("no batch came by replay after the drop")
			}
		})
	}
}

// assertSockets checks that the engine bound every rank's event and replay
// socket in dir.
func assertSockets(t *testing.T, dir string, ranks int) {
	t.Helper()
	events, replay := IPCEndpoints(dir)
	for rank := range ranks {
		for _, ep := range []string{events, replay} {
			path := strings.TrimPrefix(RankEndpoint(ep, rank), "ipc://")
			if fi, err := os.Stat(path); err != nil || fi.Mode().Type() != os.ModeSocket {
				t.Errorf("rank %d socket %s: %v; want a socket the engine bound", rank, path, err)
			}
		}
	}
}
