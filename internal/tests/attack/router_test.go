package attack

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw-router/routertest"
	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
)

// sims builds vllm-sim once ($LLMGW_VLLM_SIM_BIN overrides it), routers
// llmgw-router ($LLMGW_ROUTER_BIN).
var (
	sims    simproc.Shared
	routers routertest.Build
)

func TestMain(m *testing.M) {
	code := m.Run()
	sims.Remove()
	routers.Remove()
	os.Exit(code)
}

// router is a running llmgw-router process, with what the attacks read of
// its memory.
type router struct{ *routertest.Router }

// memKB reads a field (VmRSS, VmHWM) of the process's /proc status, in KiB.
func (r *router) memKB(t *testing.T, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.PID))
	if err != nil {
		t.Fatalf("read router memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatalf("parse %s %q: %v", field, v, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, r.PID)
	return 0
}

// peakGrowth runs attack and returns how far the router's peak resident
// memory rose above its resident memory just before, in MiB. It resets the
// peak (VmHWM) first through /proc/PID/clear_refs; where that is refused
// the peak so far counts, which can only over-report the growth, and it
// says so.
func (r *router) peakGrowth(t *testing.T, attack func()) float64 {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", r.PID), []byte("5"), 0); err != nil {
		t.Logf("cannot reset the router's peak RSS (%v); growth is measured against the peak so far", err)
	}
	before := min(r.memKB(t, "VmRSS"), r.memKB(t, "VmHWM"))
	attack()
	return float64(r.memKB(t, "VmHWM")-before) / 1024
}

// ctxFor is a context bounded by d, ended with the test.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
