// Package fleettest is test support for packages that start an
// cmd/llmgw/internal/fleet: it builds the fleet's binaries from this module once per
// test process (so a stale bin/ cannot mislead a test), links the Consul
// agent beside them, and finds processes a fleet left behind.
//
// It imports consul/consultest and the standard library only; any
// package's tests may use it.
package fleettest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/consul/consultest"
)

// commands are the binaries a fleet runs, besides Consul.
var commands = []string{
	"github.com/llmgw/llmgw/cmd/llmgw-router",
	"github.com/llmgw/llmgw/cmd/nomad-driver-vllm",
	"github.com/llmgw/llmgw/cmd/vllm-sim",
	"github.com/llmgw/llmgw/cmd/nomad-standin",
}

// Binaries is a directory of freshly built fleet binaries, shared by the
// tests of one package: declare one package-level value, and let TestMain
// call RunTests (or Remove after the tests).
type Binaries struct {
	once sync.Once
	dir  string
	err  error
}

// Dir returns the directory (for fleet.Options.BinDir), building it on
// first use. Without a Consul agent binary the test is skipped, or fails
// when CI=true, as consultest does.
func (b *Binaries) Dir(t testing.TB) string {
	t.Helper()
	consul, err := consultest.Bin()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("consul agent binary unavailable: %v", err)
		}
		t.Skipf("skipping: consul agent binary unavailable (%v); `make bin/consul` builds it", err)
	}
	b.once.Do(func() { b.dir, b.err = build(consul) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.dir
}

func build(consul string) (string, error) {
	dir, err := os.MkdirTemp("", "fleet-bin-")
	if err != nil {
		return "", err
	}
	out, err := exec.Command("go", append([]string{"build", "-o", dir + "/"}, commands...)...).CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("build fleet binaries: %v\n%s", err, out)
	}
	if err := os.Symlink(consul, filepath.Join(dir, "consul")); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("link consul: %w", err)
	}
	return dir, nil
}

// RunTests runs a package's tests and then Remove: a TestMain's whole body
// is os.Exit(bins.RunTests(m)).
func (b *Binaries) RunTests(m *testing.M) int {
	code := m.Run()
	b.Remove()
	return code
}

// Remove deletes what Dir built, if anything.
func (b *Binaries) Remove() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

// Leftovers lists processes a fleet may have started that still exist:
// this process's children, and any process whose command line or working
// directory lies under dir (supervisors and engines, which the driver
// starts in their own sessions, and routers, whose config lives there).
// A zombie whose parent is not this process is its parent's to reap and is
// not listed.
func Leftovers(dir string) []string {
	var out []string
	me := strconv.Itoa(os.Getpid())
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil || pid == me {
			continue
		}
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		state, ppid := f[0], f[1]
		cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		cwd, _ := os.Readlink("/proc/" + pid + "/cwd")
		mine := ppid == me || (dir != "" && (strings.Contains(string(cmdline), dir) || strings.HasPrefix(cwd, dir)))
		if mine && (state != "Z" || ppid == me) {
			out = append(out, fmt.Sprintf("pid %s (%s, parent %s): %s", pid, state, ppid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return out
}

// CheckNone fails the test if Leftovers finds anything.
func CheckNone(t testing.TB, dir string) {
	t.Helper()
	if left := Leftovers(dir); len(left) > 0 {
		t.Errorf("processes left behind:\n%s", strings.Join(left, "\n"))
	}
}
