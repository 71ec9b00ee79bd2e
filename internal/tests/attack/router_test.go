package attack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/internal/localproc/pdeathsig"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// sims builds vllm-sim once ($LLMGW_VLLM_SIM_BIN overrides it).
var sims simproc.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	sims.Remove()
	os.Exit(code)
}

// buildRouter builds llmgw-router from this tree into dir
// ($LLMGW_ROUTER_BIN overrides it).
func buildRouter(t *testing.T, dir string) string {
	t.Helper()
	if p := os.Getenv("LLMGW_ROUTER_BIN"); p != "" {
		return p
	}
	path := filepath.Join(dir, "llmgw-router")
	out, err := exec.Command("go", "build", "-o", path, "github.com/llmgw/llmgw/cmd/llmgw-router").CombinedOutput()
	if err != nil {
		t.Fatalf("go build llmgw-router: %v\n%s", err, out)
	}
	return path
}

// router is a running llmgw-router process.
type router struct {
	api, admin, ingest string // host:port of each listener
	pid                int

	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	logs bytes.Buffer
}

var startedLine = regexp.MustCompile(`llmgw-router started: api=(\S+) admin=(\S+) ingest=(\S+)`)

// startRouter runs bin with the HCL config src until the test ends, and
// returns once its listeners are open.
func startRouter(t *testing.T, bin, src string) *router {
	t.Helper()
	path := filepath.Join(t.TempDir(), "router.hcl")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &router{done: make(chan struct{})}
	r.cmd = exec.Command(bin, "-config", path)
	for _, kv := range os.Environ() { // LLMGW_* would override the file
		if !strings.HasPrefix(kv, "LLMGW_") {
			r.cmd.Env = append(r.cmd.Env, kv)
		}
	}
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if _, err := pdeathsig.Start(r.cmd, syscall.SIGKILL, r.cmd.Start); err != nil {
		t.Fatalf("start llmgw-router: %v", err)
	}
	r.pid = r.cmd.Process.Pid
	addrs := make(chan []string, 1)
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			r.mu.Lock()
			fmt.Fprintln(&r.logs, sc.Text())
			r.mu.Unlock()
			if m := startedLine.FindStringSubmatch(sc.Text()); m != nil {
				addrs <- m[1:]
			}
		}
		_ = r.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(poll.Timeout):
			_ = syscall.Kill(-r.pid, syscall.SIGKILL)
			<-r.done
		}
		if t.Failed() {
			t.Logf("router log:\n%s", r.log())
		}
	})
	select {
	case a := <-addrs:
		r.api, r.admin, r.ingest = a[0], a[1], a[2]
	case <-r.done:
		t.Fatalf("llmgw-router exited:\n%s", r.log())
	case <-time.After(60 * time.Second):
		t.Fatalf("llmgw-router did not start:\n%s", r.log())
	}
	return r
}

func (r *router) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

// alive reports whether the process still runs.
func (r *router) alive() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// memKB reads a field (VmRSS, VmHWM) of the process's /proc status, in KiB.
func (r *router) memKB(t *testing.T, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.pid))
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
	t.Fatalf("no %s in /proc/%d/status", field, r.pid)
	return 0
}

// peakGrowth runs attack and returns how far the router's peak resident
// memory rose above its resident memory just before, in MiB. It resets the
// peak (VmHWM) first through /proc/PID/clear_refs; where that is refused
// the peak so far counts, which can only over-report the growth, and it
// says so.
func (r *router) peakGrowth(t *testing.T, attack func()) float64 {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", r.pid), []byte("5"), 0); err != nil {
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
