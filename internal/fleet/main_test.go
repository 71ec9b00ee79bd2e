package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/consul/consultest"
)

// binDir holds the binaries TestMain builds from this tree, so a stale
// bin/ cannot mislead the tests.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fleet-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/llmgw-router", "./cmd/nomad-driver-vllm", "./cmd/vllm-sim")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build binaries: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// options are a small fleet of latency-free shards in a work dir the test
// can inspect after Close.
func options(t *testing.T) Options {
	t.Helper()
	bin, err := consultest.Bin()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("consul agent binary unavailable: %v", err)
		}
		t.Skipf("skipping: consul agent binary unavailable (%v); `make bin/consul` builds it", err)
	}
	return Options{BinDir: binDir, ConsulBin: bin, Shards: 3, Routers: 2, WorkDir: t.TempDir(),
		SimArgs: []string{"--sim-latency=false"}}
}

// waitFor polls cond until it holds, failing the test after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	if err := poll(context.Background(), 30*time.Second, what, func() error {
		if cond() {
			return nil
		}
		return notYet("condition false")
	}); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// leftovers lists processes the fleet may have started that still exist:
// our own children, and anything whose command line or working directory
// lies in the work dir (supervisors, engines, routers). Zombies whose
// parent is not us are their parent's to reap, and are not counted.
func leftovers(dir string) []string {
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
		mine := ppid == me || strings.Contains(string(cmdline), dir) || strings.HasPrefix(cwd, dir)
		if mine && (state != "Z" || ppid == me) {
			out = append(out, fmt.Sprintf("pid %s (%s, parent %s): %s", pid, state, ppid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return out
}

// checkNoProcesses fails the test if any process of the fleet survived.
func checkNoProcesses(t *testing.T, dir string) {
	t.Helper()
	if left := leftovers(dir); len(left) > 0 {
		t.Errorf("processes left after Close:\n%s", strings.Join(left, "\n"))
	}
}

// routed is one request's answer through a router.
type routed struct {
	code    int
	replica string
	mode    string
	body    string
}

func complete(t *testing.T, routerURL, prompt string) routed {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "sim-model", "prompt": prompt, "max_tokens": 2})
	resp, err := testClient.Post(routerURL+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return routed{code: resp.StatusCode, replica: resp.Header.Get("X-Llmgw-Replica"), mode: resp.Header.Get("X-Llmgw-Routing-Mode"), body: string(b)}
}

// prompt is a distinct prompt of several blocks.
func prompt(seed int) string {
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "p%d_%d ", seed, i)
	}
	return b.String()
}

// view is router url's /admin/replicas, failing the test on error.
func view(t *testing.T, f *Fleet, url string) map[string]replicaView {
	t.Helper()
	v, err := f.replicas(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// testClient keeps no idle connections, so goleak sees none after a test.
var testClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
