// Package routertest runs llmgw-router as a real process for tests that
// must see what a deployment sees (its flags and config file, its
// listeners, its signals and memory): the attack suite and the client SDK
// suite. The binary is built from this tree once per test binary, or
// taken from $LLMGW_ROUTER_BIN; every process it starts is in its own
// process group, dies with the test process (PR_SET_PDEATHSIG), and is
// stopped and reaped when its test ends.
package routertest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/localproc/pdeathsig"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// Build builds llmgw-router from this tree at most once; call Remove
// from TestMain after the tests.
type Build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Binary returns the router binary: $LLMGW_ROUTER_BIN, else this tree's,
// built on first use.
func (b *Build) Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("LLMGW_ROUTER_BIN"); p != "" {
		return p
	}
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "llmgw-router-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "llmgw-router")
		if out, err := exec.Command("go", "build", "-o", b.path, "github.com/llmgw/llmgw/cmd/llmgw-router").CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build llmgw-router: %w\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Remove deletes the built binary.
func (b *Build) Remove() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

// Router is a running llmgw-router process.
type Router struct {
	API, Admin, Ingest string // host:port of each listener
	PID                int

	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	logs bytes.Buffer
}

var startedLine = regexp.MustCompile(`llmgw-router started: api=(\S+) admin=(\S+) ingest=(\S+)`)

// Start runs bin with the HCL config src until the test ends, and returns
// once its listeners are open. LLMGW_* variables of the test's
// environment are left out: they would override the file.
func Start(t testing.TB, bin, src string) *Router {
	t.Helper()
	path := filepath.Join(t.TempDir(), "router.hcl")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Router{done: make(chan struct{})}
	r.cmd = exec.Command(bin, "-config", path)
	for _, kv := range os.Environ() {
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
	r.PID = r.cmd.Process.Pid
	addrs := make(chan []string, 1)
	go r.readLog(stderr, addrs)
	t.Cleanup(func() { r.stop(t) })
	select {
	case a := <-addrs:
		r.API, r.Admin, r.Ingest = a[0], a[1], a[2]
	case <-r.done:
		t.Fatalf("llmgw-router exited:\n%s", r.Log())
	case <-time.After(60 * time.Second):
		t.Fatalf("llmgw-router did not start:\n%s", r.Log())
	}
	return r
}

// readLog keeps the router's log, sends its listener addresses once it
// prints them, and reaps the process when its stderr closes.
func (r *Router) readLog(stderr io.Reader, addrs chan<- []string) {
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
}

// stop sends SIGTERM, kills the process group if it lingers, and logs
// the router's output when the test failed.
func (r *Router) stop(t testing.TB) {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(poll.Timeout):
		_ = syscall.Kill(-r.PID, syscall.SIGKILL)
		<-r.done
	}
	if t.Failed() {
		t.Logf("router %s log:\n%s", r.API, r.Log())
	}
}

// Log is everything the router has written to stderr.
func (r *Router) Log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

// Alive reports whether the process still runs.
func (r *Router) Alive() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}
