package chaos

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet/fleettest"
)

// bins are the fleet's binaries, built from this tree once.
var bins fleettest.Binaries

func TestMain(m *testing.M) { os.Exit(bins.RunTests(m)) }

// tableEnv names a file for the table (`make chaos` sets it from
// CHAOS_TABLE).
const tableEnv = "LLMGW_CHAOS_TABLE"

// consulPause is how long the Consul agent is stopped.
const consulPause = 30 * time.Second

// settle is how many requests must end before a fault, and again after
// routing is exact, so that every fault hits a flowing load and the fleet
// is seen serving after it.
const settle = 24

// testClient keeps no idle connections, so none outlive the test.
var testClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

// fault is one fault and the fleet's recovery from it. inject returns
// the shard it hit (0 when it hit none), for restore, once the fault is
// whole (a pause has lasted); restore is the restart, from whose start
// the time until exact routing counts.
type fault struct {
	name    string
	inject  func(f *fleet.Fleet, load *Load) (int, error)
	restore func(ctx context.Context, f *fleet.Fleet, shard int) error
}

// faults are the suite's faults, one at a time, in this order.
var faults = []fault{
	{"router: SIGKILL, then a new one",
		func(f *fleet.Fleet, _ *Load) (int, error) { return 0, f.KillRouter(0) },
		func(ctx context.Context, f *fleet.Fleet, _ int) error { return f.RestartRouter(ctx, 0) }},
	{"driver plugin: SIGKILL, restart, RecoverTask",
		func(f *fleet.Fleet, _ *Load) (int, error) { return 0, f.KillDriver() },
		func(ctx context.Context, f *fleet.Fleet, _ int) error { return f.RestartDriver(ctx) }},
	{"shard supervisor: SIGKILL, task restarted",
		func(f *fleet.Fleet, load *Load) (int, error) {
			i := busyShard(f, load)
			_, err := f.KillSupervisor(i)
			return i, err
		},
		restartShard},
	{"engine: SIGKILL, task restarted",
		func(f *fleet.Fleet, load *Load) (int, error) {
			i := busyShard(f, load)
			_, err := f.KillEngine(i)
			return i, err
		},
		restartShard},
	{"consul agent: SIGKILL, restart",
		func(f *fleet.Fleet, _ *Load) (int, error) { return 0, f.KillConsul() },
		func(ctx context.Context, f *fleet.Fleet, _ int) error { return f.RestartConsul(ctx) }},
	{"consul agent: SIGSTOP for 30 s, SIGCONT",
		func(f *fleet.Fleet, _ *Load) (int, error) {
			if err := f.PauseConsul(); err != nil {
				return 0, err
			}
			t := time.NewTimer(consulPause) // the fault's length, not a wait for anything
			defer t.Stop()
			<-t.C
			return 0, nil
		},
		func(_ context.Context, f *fleet.Fleet, _ int) error { return f.ResumeConsul() }},
}

func restartShard(ctx context.Context, f *fleet.Fleet, shard int) error {
	return f.RestartShard(ctx, shard)
}

// busyShard is the index of a shard serving streams now, so that a fault
// on it cuts streams that must migrate; the first shard when none does
// (the load keeps several streams running, so that is rare).
func busyShard(f *fleet.Fleet, load *Load) int {
	id := load.Busy()
	for i, s := range f.Shards() {
		if s.ReplicaID == id {
			return i
		}
	}
	return 0
}

// TestFaultsUnderLoad is the fault suite (see the package comment). It
// fails on a hard miss: a plain request failed, a stream hung, a process
// left behind (after a fault, or after Close); it logs the whole table.
func TestFaultsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet and faults it for over a minute")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	o := fleet.Options{BinDir: bins.Dir(t), Shards: 4, Routers: 2, WorkDir: t.TempDir(),
		APIKey:  "llmgw-chaos-test-key-0123456789abcdef",
		SimArgs: []string{"--sim-latency=true", "--sim-inter-token-latency", "20ms"}}
	start := time.Now()
	f, err := fleet.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Logf("fleet up in %s", time.Since(start).Round(time.Millisecond))
	load := &Load{Routers: f.RouterURLs, APIKey: f.APIKey(), Model: "sim-model", Workers: 6, MaxTokens: 48,
		Bound: 45 * time.Second, Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	loadCtx, stopLoad := context.WithCancel(ctx)
	loaded := make(chan struct{})
	go func() { load.Run(loadCtx); close(loaded) }()
	defer func() { stopLoad(); <-loaded }()

	// Memory before the first fault is the fleet's after some work, not
	// its first moments': a router's or the plugin's RSS grows as its
	// first requests and KV events come.
	awaitRequests(t, load, 2*settle)
	rows := make([]Row, len(faults))
	windows := make([][2]time.Time, len(faults))
	for i, flt := range faults {
		rows[i], windows[i] = runFault(ctx, t, f, o, load, flt)
	}
	stopLoad()
	<-loaded
	results := load.Results()
	for i := range rows {
		rows[i].Tally(results, windows[i][0], windows[i][1])
	}
	if err := f.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	left := fleetProcs(o)
	report(t, rows, left, time.Since(start))
}

// report logs and writes the table, and fails the test on hard misses.
func report(t *testing.T, rows []Row, left map[string][]string, took time.Duration) {
	t.Helper()
	table := Markdown(rows)
	t.Logf("fault suite, %s in all:\n%s", took.Round(time.Second), table)
	for _, r := range rows {
		for _, n := range r.Notes {
			t.Logf("%s: %s", r.Fault, n)
		}
		for _, m := range r.HardMisses() {
			t.Errorf("%s: %s", r.Fault, m)
		}
		for _, l := range r.Left {
			t.Logf("%s left: %s", r.Fault, l)
		}
	}
	for kind, ps := range left {
		t.Errorf("after Close, %d %s processes are left: %s", len(ps), kind, strings.Join(ps, "; "))
	}
	if path := os.Getenv(tableEnv); path != "" {
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}
