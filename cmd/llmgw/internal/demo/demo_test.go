package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet/fleettest"
)

var bins fleettest.Binaries

func TestMain(m *testing.M) { os.Exit(bins.RunTests(m)) }

func TestParseFlags(t *testing.T) {
	c, err := ParseFlags([]string{"-shards", "2", "-users", "3", "-policies", "round-robin,precise-prefix"})
	if err != nil || c.Shards != 2 || c.Users != 3 || c.Routers != 2 || c.Rounds != 4 || c.MaxTokens != 16 || c.Progress != isTerminal(os.Stdout) ||
		c.Discovery != "consul" {
		t.Errorf("ParseFlags = %+v, %v; want 2 shards, 3 users and defaults", c, err)
	}
	if c, err := ParseFlags([]string{"-discovery", "nomad"}); err != nil || c.Discovery != "nomad" {
		t.Errorf("ParseFlags(-discovery nomad) = %+v, %v", c, err)
	}
	if c.SLO != defaultSLO || c.SLO.TTFT != 500*time.Millisecond || c.SLO.ITL != 50*time.Millisecond {
		t.Errorf("SLO %+v; want llmgw bench's default, 500ms and 50ms", c.SLO)
	}
	if c, err := ParseFlags([]string{"-variants", "-slo-ttft", "1s"}); err != nil || !c.Variants || c.SLO.TTFT != time.Second {
		t.Errorf("ParseFlags(-variants -slo-ttft 1s) = %+v, %v", c, err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-shards", "0"}, "-shards must be at least 1"},
		{[]string{"-rounds", "x"}, "invalid value"},
		{[]string{"-rate", "0"}, "-rate must be positive"},
		{[]string{"-policies", "fastest"}, `unknown policy "fastest"`},
		{[]string{"-nope"}, "not defined"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-h"}, "-policies string"},
		{[]string{"-h"}, "-discovery string"},
		{[]string{"-discovery", "etcd"}, `-discovery "etcd": want consul or nomad`},
		{[]string{"-h"}, "-variants"},
		{[]string{"-h"}, "-slo-ttft duration"},
		{[]string{"-slo-itl", "0s"}, "-slo-ttft and -slo-itl must be positive"},
		{[]string{"-variants", "-policies", "round-robin"}, "-variants and -policies both choose the policies"},
	} {
		if _, err := ParseFlags(tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseFlags(%q): %v; want an error mentioning %q", tt.args, err, tt.want)
		}
	}
}

// TestPolicies: by default the demo runs what a user weighs llmgw on, the
// baseline, the default and every peer's policy, and none of the
// default's internal variants; -variants runs them all, -policies what it
// names.
func TestPolicies(t *testing.T) {
	names := func(c Config) []string {
		t.Helper()
		ps, err := c.policies()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	want := append([]string{bench.Baseline, bench.DefaultPolicy}, bench.PeerNames()...)
	if got := names(Config{}); !slices.Equal(got, want) {
		t.Errorf("default policies %q; want %q", got, want)
	}
	if len(bench.PeerNames()) == 0 {
		t.Error("no peer policy to compare with")
	}
	all := names(Config{Variants: true})
	if len(all) != len(bench.Policies()) || !slices.Contains(all, "precise-prefix-no-spec") {
		t.Errorf("-variants runs %q; want every policy of bench.Policies", all)
	}
	for _, p := range names(Config{}) {
		if strings.HasPrefix(p, bench.DefaultPolicy+"-") {
			t.Errorf("the default demo runs the internal variant %s", p)
		}
	}
	if got := names(Config{Policies: "precise-prefix-queued0,round-robin"}); !slices.Equal(got, []string{"precise-prefix-queued0", "round-robin"}) {
		t.Errorf("-policies precise-prefix-queued0,round-robin runs %q", got)
	}
}

// row is one line of the demo's table: policy, requests, failed, within
// the SLO, cache hits, TTFT p50 and p99.
var row = regexp.MustCompile(`(?m)^(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)%\s+(\d+)ms\s+(\d+)ms$`)

// verdictLine is the demo's verdict on a run of round-robin and the
// default alone.
var verdictLine = regexp.MustCompile(`(?m)^verdict: llmgw's default \(precise-prefix\) served (\d+) of 6 requests within the SLO ` +
	`on workload chat \(3 users x 2 turns at 50 req/s\): .*round-robin \((\d+)\); no peer's policy ran\.$`)

// small is a demo that runs in seconds: two latency-free shards, one
// router, two policies, and an SLO a loaded machine meets.
func small(t *testing.T) Config {
	return Config{BinDir: bins.Dir(t), Shards: 2, Routers: 1, Users: 3, Rounds: 2, MaxTokens: 4, Rate: 50,
		Policies: "round-robin,precise-prefix", SimArgs: []string{"--sim-latency=false"}, WorkDir: t.TempDir(),
		SLO: report.SLO{TTFT: time.Minute, ITL: time.Minute}}
}

// TestRunDemo runs the demo on a real fleet, on each service discovery,
// and reads its table.
func TestRunDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet")
	}
	for _, tt := range []struct{ discovery, banner string }{
		{"consul", "starting Consul,"},
		{"nomad", "starting Nomad's services API (stand-in),"},
	} {
		t.Run(tt.discovery, func(t *testing.T) {
			cfg := small(t)
			cfg.Discovery = tt.discovery
			// The fleet's log shares the output, from other goroutines.
			out := &cancelWriter{cancel: func() {}}
			if err := Run(context.Background(), cfg, out); err != nil {
				t.Fatalf("Run: %v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), tt.banner) {
				t.Errorf("the demo does not say it starts %q:\n%s", tt.banner, out.String())
			}
			if !strings.Contains(out.String(), "API key (generated for this run; send it as Authorization: Bearer): llmgw-") {
				t.Errorf("the demo does not print its generated API key:\n%s", out.String())
			}
			rows := row.FindAllStringSubmatch(out.String(), -1)
			if len(rows) != 2 || rows[0][1] != "round-robin" || rows[1][1] != "precise-prefix" {
				t.Fatalf("table rows %q in\n%s", rows, out.String())
			}
			for _, r := range rows {
				if r[2] != "6" || r[3] != "0" || r[4] != "6" {
					t.Errorf("%s: %s requests, %s failed, %s within the SLO; want 6, 0 and 6\n%s", r[1], r[2], r[3], r[4], out.String())
				}
			}
			// The verdict counts what the table shows.
			if v := verdictLine.FindStringSubmatch(out.String()); v == nil || v[1] != rows[1][4] || v[2] != rows[0][4] {
				t.Errorf("verdict %q; want the table's counts within the SLO (%s, %s)\n%s", v, rows[1][4], rows[0][4], out.String())
			}
			// Each second turn carries its first turn's prompt: precise
			// routing finds it cached.
			if share, _ := strconv.ParseFloat(rows[1][5], 64); share <= 0 {
				t.Errorf("precise-prefix cache-hit share %v%%; want some\n%s", share, out.String())
			}
			fleettest.CheckNone(t, cfg.WorkDir)
			goleak.VerifyNone(t)
		})
	}
}

// TestRunStopsEverythingOnCancel: Ctrl-C (a cancelled context) once the
// fleet is up ends the demo with the context's error and leaves no process.
func TestRunStopsEverythingOnCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet")
	}
	cfg := small(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelWriter{on: "fleet up", cancel: cancel}
	err := Run(ctx, cfg, out)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v; want the context's cancellation\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "stopping every process") {
		t.Errorf("output lacks the shutdown:\n%s", out.String())
	}
	fleettest.CheckNone(t, cfg.WorkDir)
	goleak.VerifyNone(t)
}

// cancelWriter cancels once the output contains on (never when on is
// empty); it may be written from several goroutines.
type cancelWriter struct {
	on     string
	cancel context.CancelFunc
	mu     sync.Mutex
	b      bytes.Buffer
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if w.on != "" && strings.Contains(w.b.String(), w.on) {
		w.cancel()
	}
	return len(p), nil
}

func (w *cancelWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
