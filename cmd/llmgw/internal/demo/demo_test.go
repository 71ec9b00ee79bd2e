package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

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
	} {
		if _, err := ParseFlags(tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseFlags(%q): %v; want an error mentioning %q", tt.args, err, tt.want)
		}
	}
}

var row = regexp.MustCompile(`(?m)^(\S+)\s+(\d+)\s+(\d+)\s+([\d.]+)%\s+(\d+)ms\s+(\d+)ms$`)

// small is a demo that runs in seconds: two latency-free shards, one
// router, two policies.
func small(t *testing.T) Config {
	return Config{BinDir: bins.Dir(t), Shards: 2, Routers: 1, Users: 3, Rounds: 2, MaxTokens: 4, Rate: 50,
		Policies: "round-robin,precise-prefix", SimArgs: []string{"--sim-latency=false"}, WorkDir: t.TempDir()}
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
				if r[2] != "6" || r[3] != "0" {
					t.Errorf("%s: %s requests, %s failed; want 6 and 0\n%s", r[1], r[2], r[3], out.String())
				}
			}
			// Each second turn carries its first turn's prompt: precise
			// routing finds it cached.
			if share, _ := strconv.ParseFloat(rows[1][4], 64); share <= 0 {
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
