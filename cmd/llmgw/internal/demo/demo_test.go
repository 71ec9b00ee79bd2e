package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestParseFlags(t *testing.T) {
	c, err := ParseFlags([]string{"-engines", "2", "-users", "3"})
	if err != nil || c.Engines != 2 || c.Users != 3 || c.Rounds != 4 || c.MaxTokens != 24 {
		t.Errorf("ParseFlags = %+v, %v; want 2 engines, 3 users and defaults", c, err)
	}
	for _, bad := range [][]string{{"-engines", "0"}, {"-rounds", "x"}, {"-nope"}} {
		if _, err := ParseFlags(bad); err == nil {
			t.Errorf("ParseFlags(%q) accepted", bad)
		}
	}
}

func TestPercentile(t *testing.T) {
	d := []time.Duration{5, 1, 4, 2, 3}
	if pct(d, 50) != 3 || pct(d, 99) != 5 || pct(nil, 50) != 0 {
		t.Errorf("pct: p50 %v p99 %v; want 3 and 5", pct(d, 50), pct(d, 99))
	}
}

var row = regexp.MustCompile(`(?m)^(\S+)\s+(\d+)\s+([\d.]+)%`)

// TestRunDemo runs the demo on two real vllm-sim processes.
func TestRunDemo(t *testing.T) {
	defer goleak.VerifyNone(t)
	sim := filepath.Join(t.TempDir(), "vllm-sim")
	if out, err := exec.Command("go", "build", "-o", sim, "github.com/llmgw/llmgw/cmd/vllm-sim").CombinedOutput(); err != nil {
		t.Fatalf("build vllm-sim: %v\n%s", err, out)
	}
	var out bytes.Buffer
	cfg := Config{SimBinary: sim, Engines: 2, Users: 2, Rounds: 2, MaxTokens: 4}
	if err := Run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	rows := row.FindAllStringSubmatch(out.String(), -1)
	if len(rows) != 2 || rows[0][1] != "round-robin" || rows[1][1] != "conversation-affinity" {
		t.Fatalf("table rows %q in\n%s", rows, out.String())
	}
	for _, r := range rows {
		if r[2] != "4" {
			t.Errorf("%s ran %s requests; want 4", r[1], r[2])
		}
	}
	// With affinity each second turn finds its whole history cached.
	if share, _ := strconv.ParseFloat(rows[1][3], 64); share < 40 {
		t.Errorf("affinity cache-hit share %v%%; want at least 40%%\n%s", share, out.String())
	}
}

// An engine that never becomes ready is stopped and reaped when the demo is
// cancelled (Ctrl-C): the goroutine that waits on it must be gone.
func TestRunStopsEnginesOnCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	hang := filepath.Join(t.TempDir(), "hang")
	if err := os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := Run(ctx, Config{SimBinary: hang, Engines: 1, Users: 1, Rounds: 1, MaxTokens: 1}, &bytes.Buffer{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v; want the context's deadline error", err)
	}
}
