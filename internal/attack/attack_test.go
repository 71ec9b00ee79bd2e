package attack

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/poll"
	"github.com/llmgw/llmgw/internal/simproc"
)

// The router's bounds under attack, short so the suite is quick; the
// assertions allow slack for a loaded machine, never tightness.
const (
	bodyTimeout   = time.Second
	headerTimeout = time.Second
	idleTimeout   = 2 * time.Second
	maxConns      = 64
	adminToken    = "admin-secret"
	kvToken       = "kv-secret"
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
`, adminToken, kvToken, headerTimeout, bodyTimeout, idleTimeout, maxConns, model, model, sim)
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
	r := startRouter(t, buildRouter(t, t.TempDir()), config(strings.TrimPrefix(sim.URL, "http://")))
	poll.Until(t, "the router to be ready", func() bool { return status(t, "GET", "http://"+r.api+"/ready", nil, "") == 200 })

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
		{"admin without credentials", adminWithoutCredentials},
		{"cache probing through headers", cacheProbing},
	} {
		t.Run(a.name, func(t *testing.T) {
			growth := r.peakGrowth(t, func() { a.run(t, r) })
			t.Logf("BOUND %s: peak RSS growth %.1f MB (bound %d MB)", a.name, growth, maxGrowthMB)
			if growth > maxGrowthMB {
				t.Errorf("router's peak RSS grew %.1f MB; want under %d MB", growth, maxGrowthMB)
			}
			if !r.alive() {
				t.Fatalf("router died:\n%s", r.log())
			}
			// Still serving: the attack left the router able to answer.
			poll.Until(t, "the router to serve again", func() bool { return status(t, "GET", "http://"+r.api+"/health", nil, "") == 200 })
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

// filler is a body of a prefix, then one byte repeated, left bytes in all.
type filler struct {
	prefix []byte
	fill   byte
	left   int64
}

func (f *filler) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && f.left > 0 {
		if len(f.prefix) > 0 {
			p[n] = f.prefix[0]
			f.prefix = f.prefix[1:]
		} else {
			p[n] = f.fill
		}
		n++
		f.left--
	}
	return n, nil
}

// oversizedBody: 64 MB against the 8 MiB max_body_bytes gets 413 once the
// cap is read, not after the whole body.
func oversizedBody(t *testing.T, r *router) {
	const size = 64 << 20
	line, took := rawPost(t, r.api, "/v1/completions", nil, size, &filler{prefix: []byte(`{"model":"sim-model","prompt":"`), fill: 'a', left: size})
	if !strings.Contains(line, " 413 ") {
		t.Errorf("answer %q; want 413", line)
	}
	t.Logf("BOUND oversized body: 64 MB body refused with %q after %s", line, took.Round(time.Millisecond))
}

// nestedBody: a megabyte of nested arrays is refused as malformed.
func nestedBody(t *testing.T, r *router) {
	for _, tt := range []struct{ name, body string }{
		{"arrays", `{"model":"sim-model","prompt":` + strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20) + `}`},
		{"objects", `{"model":"sim-model","messages":[{"role":"user","content":` + strings.Repeat(`{"a":`, 200_000) + `1` + strings.Repeat("}", 200_000) + `}]}`},
	} {
		start := time.Now()
		line, _ := rawPost(t, r.api, "/v1/chat/completions", nil, int64(len(tt.body)), strings.NewReader(tt.body))
		if !strings.Contains(line, " 400 ") && !strings.Contains(line, " 413 ") {
			t.Errorf("%s: answer %q; want 400", tt.name, line)
		}
		t.Logf("BOUND deeply nested body (%s, %d bytes): %q after %s", tt.name, len(tt.body), line, time.Since(start).Round(time.Millisecond))
	}
}

// trickle sends one byte every period until stop closes.
type trickle struct {
	period time.Duration
	stop   chan struct{}
}

func (tr trickle) Read(p []byte) (int, error) {
	select {
	case <-time.After(tr.period):
		p[0] = ' '
		return 1, nil
	case <-tr.stop:
		return 0, io.EOF
	}
}

// slowBody: a body trickled a byte every 200 ms is cut off with 408 after
// body_timeout.
func slowBody(t *testing.T, r *router) {
	stop := make(chan struct{})
	defer close(stop)
	line, took := rawPost(t, r.api, "/v1/completions", nil, 1<<20, trickle{period: 200 * time.Millisecond, stop: stop})
	if !strings.Contains(line, " 408 ") {
		t.Errorf("answer %q; want 408", line)
	}
	if took < bodyTimeout/2 || took > bodyTimeout+slack {
		t.Errorf("cut off after %s; want about the %s body_timeout", took, bodyTimeout)
	}
	t.Logf("BOUND slow body: cut off with %q after %s (body_timeout %s)", line, took.Round(time.Millisecond), bodyTimeout)
}

// idleConnections: twice max_connections silent connections are all
// closed; each one accepted goes after read_header_timeout, the rest wait
// in the kernel's queue meanwhile, and none is kept.
func idleConnections(t *testing.T, r *router) {
	const n = 2 * maxConns
	start := time.Now()
	var wg sync.WaitGroup
	took := make([]time.Duration, n)
	errs := make([]error, n)
	for i := range n {
		c, err := net.Dial("tcp", r.api) // the kernel completes it, accepted or not
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(slack + 2*headerTimeout))
			_, err := c.Read(make([]byte, 1))
			took[i], errs[i] = time.Since(start), err
		}()
	}
	wg.Wait()
	var last time.Duration
	for i, err := range errs {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection %d still open after %s", i, took[i])
		}
		last = max(last, took[i])
	}
	if last < headerTimeout/2 {
		t.Errorf("idle connections closed after %s, before read_header_timeout %s", last, headerTimeout)
	}
	t.Logf("BOUND idle connections: %d silent connections (max_connections %d) all closed within %s (read_header_timeout %s each)", n, maxConns, last.Round(time.Millisecond), headerTimeout)

	// A kept-alive connection that goes quiet after a request is closed
	// after idle_timeout.
	c, err := net.Dial("tcp", r.api)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /health HTTP/1.1\r\nHost: attack\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	idleStart := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(idleTimeout + slack))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("data after the response")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("kept-alive connection still open after %s", time.Since(idleStart))
	}
	t.Logf("BOUND idle keep-alive: closed after %s (idle_timeout %s)", time.Since(idleStart).Round(time.Millisecond), idleTimeout)
}

// headerFlood: more header fields than max_headers, and a header block
// over max_header_bytes, are refused with 431.
func headerFlood(t *testing.T, r *router) {
	many := http.Header{}
	for i := range 2000 {
		many.Set(fmt.Sprintf("X-F%d", i), "v")
	}
	for _, tt := range []struct {
		name string
		h    http.Header
	}{
		{"2000 fields", many},
		{"1 MB field", http.Header{"X-Big": {strings.Repeat("b", 1<<20)}}},
	} {
		start := time.Now()
		if c := status(t, "GET", "http://"+r.api+"/health", tt.h, ""); c != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s: %d; want 431", tt.name, c)
		}
		t.Logf("BOUND header flood (%s): 431 after %s", tt.name, time.Since(start).Round(time.Millisecond))
	}
}

// sessionIDs: an id over 128 bytes is refused with 400; a thousand
// requests with distinct ids at the cap are served and remembered within
// the scheduler's max_sessions.
func sessionIDs(t *testing.T, r *router) {
	body := `{"model":"sim-model","prompt":"hello","max_tokens":1}`
	for _, n := range []int{129, 32 << 10} {
		if c := status(t, "POST", "http://"+r.api+"/v1/completions", http.Header{"X-Session-Id": {strings.Repeat("s", n)}}, body); c != 400 {
			t.Errorf("%d-byte session id: %d; want 400", n, c)
		}
	}
	const n, workers = 1000, 8
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := 0
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				req, _ := http.NewRequest("POST", "http://"+r.api+"/v1/completions", strings.NewReader(body))
				req.Header.Set("X-Session-Id", fmt.Sprintf("%0128d", i))
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					mu.Lock()
					bad++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if bad > 0 {
		t.Errorf("%d of %d requests with 128-byte session ids failed", bad, n)
	}
	t.Logf("BOUND huge session ids: >128 bytes refused with 400; %d distinct 128-byte ids served in %s", n, time.Since(start).Round(time.Millisecond))
}

// unauthenticatedIngest: four concurrent 50 MB posts without the token are
// answered 401 before their bodies are read.
func unauthenticatedIngest(t *testing.T, r *router) {
	const size = 50 << 20
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := map[string]string{"Authorization": "Bearer guess"}
			if i%2 == 1 {
				h = nil
			}
			line, took, err := post(r.ingest, kvwire.Path, h, size, &filler{fill: 0xc0, left: size})
			if err != nil || !strings.Contains(line, " 401 ") {
				t.Errorf("answer %q (%v); want 401", line, err)
			}
			t.Logf("BOUND unauthenticated ingest: 50 MB body answered %q after %s", line, took.Round(time.Millisecond))
		}()
	}
	wg.Wait()
	line, _ := rawPost(t, r.ingest, "/v1/peer-load", nil, size, &filler{fill: ' ', left: size})
	if !strings.Contains(line, " 401 ") {
		t.Errorf("peer load: answer %q; want 401", line)
	}
}

// amplifyingMsgpack: with the token, a body whose claimed lengths are
// far beyond its bytes, and one that would decode to 64 times its size,
// are refused as malformed.
func amplifyingMsgpack(t *testing.T, r *router) {
	head := func(n int) []byte {
		b := []byte{0x96, kvwire.Version, 0xa1, 'n', 0x01, 0x01, 0xc3, 0x91, 0x94, 0xa5, 's', 'i', 'm', '/', '1', 0x10, 0xc2, 0xdd}
		return binary.BigEndian.AppendUint32(b, uint32(n))
	}
	const n = 8 << 20
	for _, tt := range []struct {
		name string
		body []byte
		want string
	}{
		{"a billion groups claimed in 22 bytes", head(1 << 30), "exceeds the"},
		{"8 MB of nil groups (512 MB decoded)", append(head(n), bytes.Repeat([]byte{0xc0}, n)...), "over 4 times"},
	} {
		start := time.Now()
		req, _ := http.NewRequest("POST", "http://"+r.ingest+kvwire.Path, bytes.NewReader(tt.body))
		req.Header.Set("Authorization", "Bearer "+kvToken)
		resp, err := noKeepAlive.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s: %d %s; want 400 naming %q", tt.name, resp.StatusCode, b, tt.want)
		}
		t.Logf("BOUND amplifying msgpack (%s): %d after %s: %s", tt.name, resp.StatusCode, time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(b)))
	}
}

// adminWithoutCredentials: the API port has no admin paths at all; the
// admin port answers 401 without the token.
func adminWithoutCredentials(t *testing.T, r *router) {
	for _, p := range []struct{ method, path string }{{"GET", "/admin/replicas"}, {"GET", "/metrics"}, {"POST", "/admin/explain/completions"}} {
		if c := status(t, p.method, "http://"+r.api+p.path, nil, `{"model":"sim-model","prompt":"x"}`); c != 404 {
			t.Errorf("API port %s %s: %d; want 404", p.method, p.path, c)
		}
		for _, auth := range []string{"", "Bearer wrong", "Basic YWRtaW46YWRtaW4="} {
			h := http.Header{}
			if auth != "" {
				h.Set("Authorization", auth)
			}
			if c := status(t, p.method, "http://"+r.admin+p.path, h, `{"model":"sim-model","prompt":"x"}`); c != 401 {
				t.Errorf("admin port %s %s with %q: %d; want 401", p.method, p.path, auth, c)
			}
		}
	}
	if c := status(t, "GET", "http://"+r.admin+"/admin/replicas", http.Header{"Authorization": {"Bearer " + adminToken}}, ""); c != 200 {
		t.Errorf("admin with the token: %d", c)
	}
	t.Logf("BOUND admin without credentials: API port 404 on /admin/*, /metrics; admin port 401 without the token")
}

// cacheProbing: the same prompt twice (the second a cache hit) carries no
// header that says so.
func cacheProbing(t *testing.T, r *router) {
	body := `{"model":"sim-model","prompt":"` + strings.Repeat("the secret prefix of another tenant ", 8) + `","max_tokens":1}`
	for i := range 2 {
		resp, err := noKeepAlive.Post("http://"+r.api+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
		for name := range resp.Header {
			if strings.HasPrefix(strings.ToLower(name), "x-llmgw") {
				t.Errorf("request %d carries %s: %q", i, name, resp.Header.Get(name))
			}
		}
	}
	t.Logf("BOUND cache probing through headers: no X-Llmgw-* header on a miss or a hit")
}
