package simproc

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script writes an executable shell script standing in for vllm-sim.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sim")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStartServesAndStops(t *testing.T) {
	sim, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(context.Background(), Options{Binary: sim, Args: []string{"m", "--host", "127.0.0.1", "--port", "0"}}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(p.URL + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s/health: %v %v", p.URL, resp, err)
	}
	resp.Body.Close()
	if p.StopWithin(10 * time.Second) {
		t.Error("vllm-sim needed SIGKILL; want a clean exit on SIGTERM")
	}
	if code := p.ExitCode(); code != 0 {
		t.Errorf("exit code %d; want 0", code)
	}
	p.Stop() // idempotent
}

func TestWaitReadyReportsEarlyExit(t *testing.T) {
	_, err := Start(context.Background(), Options{Binary: script(t, `echo "no such model: $2" >&2; exit 3`), Args: []string{"bad"}}, 30*time.Second)
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "no such model: bad") {
		t.Fatalf("Start: %v; want ErrExited with the process's output", err)
	}
}

// A process that never serves is stopped and reaped when the caller gives
// up, even if it ignores SIGTERM.
func TestStopKillsStubbornProcess(t *testing.T) {
	p, err := Launch(Options{Binary: script(t, `trap "" TERM; while :; do sleep 1; done`)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := p.WaitReady(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady: %v; want the context's deadline", err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("WaitReady returned before the process was reaped")
	}
	if p.StopWithin(time.Second) {
		t.Error("a reaped process was killed again")
	}
}

func TestSharedPrefersEnvironment(t *testing.T) {
	t.Setenv("LLMGW_VLLM_SIM_BIN", "/opt/vllm-sim")
	var s Shared
	if p, err := s.Path(); err != nil || p != "/opt/vllm-sim" {
		t.Errorf("Path() = %q, %v; want the binary named by LLMGW_VLLM_SIM_BIN", p, err)
	}
	s.Remove() // nothing was built: nothing to remove
	if s.dir != "" {
		t.Errorf("Shared built into %s although the environment named a binary", s.dir)
	}
}
