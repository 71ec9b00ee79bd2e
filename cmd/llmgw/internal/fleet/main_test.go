package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet/fleettest"
	testpoll "github.com/llmgw/llmgw/internal/testkit/poll"
)

// bins are the fleet's binaries, built from this tree once.
var bins fleettest.Binaries

func TestMain(m *testing.M) {
	if os.Getenv(ownerEnv) != "" {
		os.Exit(ownerMain()) // TestHardKill's fleet owner
	}
	os.Exit(bins.RunTests(m))
}

// options are a small fleet of latency-free shards in a work dir the test
// can inspect after Close.
func options(t *testing.T) Options {
	t.Helper()
	return Options{BinDir: bins.Dir(t), Shards: 3, Routers: 2, WorkDir: t.TempDir(),
		SimArgs: []string{"--sim-latency=false"}, APIKey: testAPIKey}
}

// waitFor waits for cond with internal/testkit/poll and returns how long it took,
// which the tests log to show how quickly the fleet reacts.
func waitFor(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	testpoll.Until(t, what, cond)
	return time.Since(start)
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
	req, _ := http.NewRequest(http.MethodPost, routerURL+"/v1/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testAPIKey)
	resp, err := testClient.Do(req)
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

// testAPIKey is the routers' client key in the fleet tests.
const testAPIKey = "llmgw-fleet-test-key-0123456789abcdef"

// testClient keeps no idle connections, so goleak sees none after a test.
var testClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
