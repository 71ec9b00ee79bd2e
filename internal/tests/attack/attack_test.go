package attack

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw-router/routertest"
	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// The router's bounds under attack, short so the suite is quick; the
// assertions allow slack for a loaded machine, never tightness.
const (
	bodyTimeout   = 3 * time.Second // the 8 MB attacks must arrive within it on a loaded machine
	headerTimeout = time.Second
	idleTimeout   = 2 * time.Second
	maxConns      = 64
	adminToken    = "admin-secret"
	kvToken       = "kv-secret"
	peerToken     = "peer-secret"
	model         = "sim-model"

	// slack is how much later than its timeout a cut may come.
	slack = 15 * time.Second
	// maxGrowthMB bounds the router's peak RSS growth under any attack.
	maxGrowthMB = 64
)

func config(sim string) string {
	return fmt.Sprintf(`
listen              = "127.0.0.1:0"
ingest_listen       = "127.0.0.1:0"
admin_listen        = "127.0.0.1:0"
admin_token         = %q
kv_token            = %q
peer_token          = %q
read_header_timeout = %q
body_timeout        = %q
idle_timeout        = %q
max_connections     = %d
log_level           = "info"

model %q {
  sim = true
}

replica "sim/1" {
  model      = %q
  address    = %q
  block_size = 16
  kv_events  = true
}
`, adminToken, kvToken, peerToken, headerTimeout, bodyTimeout, idleTimeout, maxConns, model, model, sim)
}

// TestAttacks starts one router and runs every attack on it in turn,
// logging the bound each one meets.
func TestAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("attack suite: builds and starts llmgw-router and vllm-sim (about a minute); skipped with -short")
	}
	simBin, err := sims.Path()
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simproc.Start(ctxFor(t, time.Minute), simproc.Options{Binary: simBin,
		Args: []string{model, "--host", "127.0.0.1", "--port", "0", "--block-size", "16", "--sim-latency=false"}}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Stop)
	r := &router{routertest.Start(t, routers.Binary(t), config(strings.TrimPrefix(sim.URL, "http://")))}
	poll.Until(t, "the router to be ready", func() bool { return status(t, "GET", "http://"+r.API+"/ready", nil, "") == 200 })

	for _, a := range []struct {
		name string
		run  func(t *testing.T, r *router)
	}{
		{"oversized body", oversizedBody},
		{"deeply nested body", nestedBody},
		{"slow body", slowBody},
		{"idle connections", idleConnections},
		{"header flood", headerFlood},
		{"huge session ids", sessionIDs},
		{"unauthenticated ingest", unauthenticatedIngest},
		{"amplifying msgpack", amplifyingMsgpack},
		{"driver token on the peer paths", driverTokenOnPeers},
		{"admin without credentials", adminWithoutCredentials},
		{"cache probing through headers", cacheProbing},
		{"readiness without a key", readyWithoutKey},
	} {
		t.Run(a.name, func(t *testing.T) {
			growth := r.peakGrowth(t, func() { a.run(t, r) })
			t.Logf("BOUND %s: peak RSS growth %.1f MB (bound %d MB)", a.name, growth, maxGrowthMB)
			if growth > maxGrowthMB {
				t.Errorf("router's peak RSS grew %.1f MB; want under %d MB", growth, maxGrowthMB)
			}
			if !r.Alive() {
				t.Fatalf("router died:\n%s", r.Log())
			}
			// Still serving: the attack left the router able to answer.
			poll.Until(t, "the router to serve again", func() bool { return status(t, "GET", "http://"+r.API+"/health", nil, "") == 200 })
		})
	}
}

// status sends one request and returns its status code (0 when the
// connection failed).
func status(t *testing.T, method, url string, h http.Header, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second}

// rawPost writes a request with the given headers on its own connection,
// then streams body (declaring length bytes) while it reads the answer,
// and returns the answer's status line and how long it took to come.
func rawPost(t *testing.T, addr, path string, h map[string]string, length int64, body io.Reader) (string, time.Duration) {
	t.Helper()
	line, took, err := post(addr, path, h, length, body)
	if err != nil {
		t.Fatal(err)
	}
	return line, took
}

// post is rawPost for any goroutine: it returns its error.
func post(addr, path string, h map[string]string, length int64, body io.Reader) (string, time.Duration, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", 0, err
	}
	defer c.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: attack\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, length)
	for k, v := range h {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	start := time.Now()
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", 0, err
	}
	go func() { _, _ = io.Copy(c, body) }() // fails once the router closes: that is the point
	_ = c.SetReadDeadline(time.Now().Add(slack + 30*time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", 0, fmt.Errorf("no answer after %s: %w", time.Since(start), err)
	}
	return strings.TrimSpace(line), time.Since(start), nil
}
