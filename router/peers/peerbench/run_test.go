package peerbench

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// TestRun: three routers over loopback all hear from each other, and the
// counts add up: bytes include each message's headers and body, CPU is
// spent. Counts only; a busy machine changes the rates, not the checks.
func TestRun(t *testing.T) {
	res, err := Run(context.Background(), Options{Routers: 3, Tenants: 2, Warmup: 300 * time.Millisecond, Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Converged {
		t.Error("some router did not count both others as peers")
	}
	if res.MessagesPerSec <= 0 || res.BytesPerSec < 200*res.MessagesPerSec {
		t.Errorf("%.1f messages/s and %.0f bytes/s per router; want some, each over 200 bytes", res.MessagesPerSec, res.BytesPerSec)
	}
	if res.CPUPerMessage <= 0 || res.NominalPerSec != 40 {
		t.Errorf("CPU per message %s, nominal %.0f/s; want some CPU and 2 peers × 20/s", res.CPUPerMessage, res.NominalPerSec)
	}
}

func TestRunNeedsTwoRouters(t *testing.T) {
	if _, err := Run(context.Background(), Options{Routers: 1}); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Fatalf("Run with 1 router: %v; want an error asking for 2", err)
	}
}

func TestNominal(t *testing.T) {
	for _, tt := range []struct {
		o    Options
		want float64
	}{
		{Options{Routers: 2}, 20},
		{Options{Routers: 6}, 100},
		{Options{Routers: 8}, 70},         // 70 ms: every other tick
		{Options{Routers: 32}, 31 / 0.35}, // 310 ms: the seventh tick
		{Options{Routers: 32, MaxRate: -1}, 620},
		{Options{Routers: 32, MaxRate: 10}, 31}, // the keep-alive's floor
	} {
		if got := nominal(tt.o); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("nominal(%+v) = %g; want %g", tt.o, got, tt.want)
		}
	}
}

// TestRunAlone: routers that share nothing send and receive nothing.
func TestRunAlone(t *testing.T) {
	res, err := Run(context.Background(), Options{Routers: 3, Alone: true, Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.MessagesPerSec != 0 || res.Converged {
		t.Errorf("alone: %.1f messages/s, converged %t; want none and no peers", res.MessagesPerSec, res.Converged)
	}
}
