package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/ratelimit"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/route"
	"github.com/llmgw/llmgw/router/scheduler"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type harness struct {
	gw       *Gateway
	planner  *route.Planner
	limits   *ratelimit.Limiter // the planner's, nil unless a test set them
	prompts  *prompt.Prompts
	srv      *httptest.Server
	admin    *httptest.Server // AdminHandler
	set      *replicas.Set
	tracker  *load.Tracker
	backends []string
}

// newHarness runs a gateway for model "m" (vllm-sim tokenizer) over the
// given backends, named r0, r1, ... in order.
func newHarness(t testing.TB, maxBody int64, backends ...string) *harness {
	t.Helper()
	return newHarnessWith(t, func(d *testDeps, c *scheduler.Config) { d.Options.MaxBodyBytes = maxBody }, backends...)
}

// testDeps are what a test may adjust before its gateway is built: the
// gateway's own dependencies and its planner's.
type testDeps struct {
	Deps
	Route route.Deps
}

// newHarnessWith is newHarness with the dependencies and scheduler config
// adjusted by edit.
func newHarnessWith(t testing.TB, edit func(*testDeps, *scheduler.Config), backends ...string) *harness {
	t.Helper()
	models := index.NewModels(index.Options{})
	sink := ingest.New(models, ingest.Options{})
	// Queued prefill does not drain with time here: tests read exact
	// counts, on a clock they do not control (router/load tests the drain).
	tracker := load.NewTracker(load.WithPrefillRate(0))
	set := replicas.New(sink, tracker, replicas.Options{})
	var list []replicas.Replica
	for i, b := range backends {
		list = append(list, replicas.Replica{ID: fmt.Sprintf("r%d", i), Model: "m", Address: b, BlockSize: 16, Source: "static"})
	}
	set.Replace(list)
	return buildHarness(t, set, tracker, models, edit)
}

// buildHarness builds a planner and a gateway over set, serving both of
// the gateway's handlers, with the test's edits.
func buildHarness(t testing.TB, set *replicas.Set, tracker *load.Tracker, idx scheduler.PrefixIndex, edit func(*testDeps, *scheduler.Config)) *harness {
	t.Helper()
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		t.Fatal(err)
	}
	prompts, _ := prompt.New(map[string]prompt.Source{"m": {Encoder: simencoder.Encoder{}}})
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// The tests read where each request went; a deployment opts in.
	d := testDeps{
		Deps:  Deps{Metrics: NewMetrics(), Transport: tr, Options: Options{ExposeRouteHeaders: true}},
		Route: route.Deps{Replicas: set, Tracker: tracker, Prompts: prompts, Options: route.Options{Attempts: 3}},
	}
	cfg := scheduler.DefaultConfig()
	if edit != nil {
		edit(&d, &cfg)
	}
	sched, err := reg.Build(cfg, scheduler.Deps{Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	d.Route.Scheduler, d.Route.Registry = sched, d.Metrics.Registry
	planner, err := route.New(d.Route)
	if err != nil {
		t.Fatal(err)
	}
	d.Planner = planner
	gw, err := New(d.Deps)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw.Handler())
	admin := httptest.NewServer(gw.AdminHandler())
	t.Cleanup(func() { srv.Close(); admin.Close(); tr.CloseIdleConnections() })
	return &harness{gw: gw, planner: planner, limits: d.Route.Limits, prompts: prompts, srv: srv, admin: admin, set: set, tracker: tracker}
}

// newHarnessB is newHarness over one backend serving h.
func newHarnessB(tb testing.TB, h http.HandlerFunc) *harness {
	s := httptest.NewServer(h)
	tb.Cleanup(s.Close)
	return newHarness(tb, 1<<20, s.Listener.Addr().String())
}

func backend(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func openAIError(t *testing.T, b []byte) openai.Error {
	t.Helper()
	var e struct{ Error openai.Error }
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" {
		t.Fatalf("not an OpenAI error body: %s", b)
	}
	return e.Error
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hello there"}]}`

func TestErrors(t *testing.T) {
	ok := backend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	h := newHarness(t, 1024, ok)
	tests := []struct {
		name, method, path, body string
		code                     int
		msg                      string
	}{
		{"malformed json", "POST", "/v1/chat/completions", `{"model":`, 400, "malformed JSON"},
		{"unknown model", "POST", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, "The model `nope` does not exist."},
		{"oversize", "POST", "/v1/completions", `{"model":"m","prompt":"` + strings.Repeat("x", 2000) + `"}`, 413, "larger than the limit of 1024 bytes"},
		{"no prompt", "POST", "/v1/completions", `{"model":"m"}`, 400, "prompt is required"},
		{"unknown path", "GET", "/v1/nothing", "", 404, "no such endpoint"},
		{"wrong method", "GET", "/v1/completions", "", 405, "not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, h.srv.URL+tt.path, strings.NewReader(tt.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.code {
				t.Errorf("status %d; want %d (%s)", resp.StatusCode, tt.code, b)
			}
			if e := openAIError(t, b); !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message %q; want it to contain %q", e.Message, tt.msg)
			}
		})
	}
}

func TestRetryBeforeFirstByte(t *testing.T) {
	var busyHits atomic.Int32
	busy := backend(t, func(w http.ResponseWriter, r *http.Request) {
		busyHits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	good := backend(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"echo":%q}`, b)
	})
	// r0 refuses connections, r1 is overloaded, r2 answers. r2 carries
	// extra load so it ranks last: every request must try r0 and r1 first
	// and end on r2 with its body intact.
	h := newHarness(t, 1<<20, netport.FreeAddr(t), busy, good)
	for range 5 {
		defer h.tracker.Begin("r2", 1000)()
	}
	for i := range 3 {
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"question %d"}]}`, i)
		resp, b := post(t, h.srv.URL+"/v1/chat/completions", body)
		if resp.StatusCode != 200 || resp.Header.Get(HeaderReplica) != "r2" || resp.Header.Get(HeaderAttempts) != "3" {
			t.Fatalf("status %d replica %q attempts %q body %s; want 200 from r2 on attempt 3",
				resp.StatusCode, resp.Header.Get(HeaderReplica), resp.Header.Get(HeaderAttempts), b)
		}
		var got struct{ Echo string }
		if err := json.Unmarshal(b, &got); err != nil || got.Echo != body {
			t.Fatalf("replica saw body %q; want the client's", got.Echo)
		}
		if resp.Header.Get(HeaderMode) == "" || resp.Header.Get(HeaderCachedTokens) == "" {
			t.Errorf("routing headers missing: %v", resp.Header)
		}
	}
	if busyHits.Load() != 3 {
		t.Errorf("overloaded replica saw %d requests; want 3", busyHits.Load())
	}
	// Three failures in a row open both failing replicas' breakers: the
	// next request goes straight to r2.
	if h.set.Healthy("r0") || h.set.Healthy("r1") {
		t.Errorf("breakers: r0 healthy %v, r1 healthy %v; want both open", h.set.Healthy("r0"), h.set.Healthy("r1"))
	}
	resp, _ := post(t, h.srv.URL+"/v1/chat/completions", chatBody)
	if resp.Header.Get(HeaderAttempts) != "1" {
		t.Errorf("attempts %q after the breakers opened; want 1", resp.Header.Get(HeaderAttempts))
	}
}

func TestAllReplicasDown(t *testing.T) {
	h := newHarness(t, 1<<20, netport.FreeAddr(t), netport.FreeAddr(t))
	resp, b := post(t, h.srv.URL+"/v1/chat/completions", chatBody)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d; want 502", resp.StatusCode)
	}
	if e := openAIError(t, b); !strings.Contains(e.Message, "no replica answered") {
		t.Errorf("message %q", e.Message)
	}
}

// TestStreamingPassesChunks checks that each SSE event reaches the client
// before the replica writes the next one: the replica waits for the
// client's acknowledgement (through a channel) between events.
func TestStreamingPassesChunks(t *testing.T) {
	ack := make(chan struct{})
	stream := backend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: {\"n\":%d}\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-ack:
			case <-time.After(poll.Timeout):
				return // the router buffered: the client never saw the event
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
	})
	h := newHarness(t, 1<<20, stream)
	resp, err := http.Post(h.srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var events []string
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		events = append(events, line)
		if line != "data: [DONE]" {
			ack <- struct{}{}
		}
	}
	want := []string{`data: {"n":0}`, `data: {"n":1}`, `data: {"n":2}`, "data: [DONE]"}
	if fmt.Sprint(events) != fmt.Sprint(want) {
		t.Errorf("events %q; want %q", events, want)
	}
}

func TestStreamDiesMidway(t *testing.T) {
	dying := backend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":0}\n\n")
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // the replica dies
		}
	})
	h := newHarness(t, 1<<20, dying)
	resp, b := post(t, h.srv.URL+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	s := string(b)
	if !strings.Contains(s, `data: {"n":0}`) || !strings.Contains(s, "failed mid-stream") || !strings.HasSuffix(s, "data: [DONE]\n\n") {
		t.Errorf("stream %q; want the first event, an error event and [DONE]", s)
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	canceled := make(chan struct{})
	started := make(chan struct{})
	slow := backend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
		close(canceled)
	})
	h := newHarness(t, 1<<20, slow)
	resp, err := http.Post(h.srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	resp.Body.Close()
	select {
	case <-canceled:
	case <-time.After(poll.Timeout):
		t.Fatal("upstream request not canceled after the client left")
	}
}

func TestModelsHealthReadyMetrics(t *testing.T) {
	ok := backend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	h := newHarness(t, 1<<20, ok)
	getAt := func(base, path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	get := func(path string) (int, string) { return getAt(h.srv.URL, path) }
	admin := func(path string) (int, string) { return getAt(h.admin.URL, path) }
	if c, b := get("/v1/models"); c != 200 || !strings.Contains(b, `"id":"m"`) {
		t.Errorf("/v1/models: %d %s", c, b)
	}
	if c, _ := get("/health"); c != 200 {
		t.Errorf("/health: %d", c)
	}
	if c, b := get("/ready"); c != 200 || !strings.Contains(b, "ready") || strings.Contains(b, "models") {
		t.Errorf("/ready: %d %s; want 200, ready, naming no model", c, b)
	}
	post(t, h.srv.URL+"/v1/chat/completions", chatBody)
	for _, p := range []string{"/metrics", "/admin/replicas"} {
		if c, _ := get(p); c != http.StatusNotFound {
			t.Errorf("%s on the API handler: %d; want 404 (admin handler only)", p, c)
		}
	}
	if c, b := admin("/metrics"); c != 200 || !strings.Contains(b, `llmgw_requests_total{code="200",endpoint="chat"} 1`) ||
		!strings.Contains(b, `llmgw_routing_overhead_seconds_count{stage="total"} 1`) {
		t.Errorf("/metrics: %d, missing series in:\n%s", c, b)
	}
	if c, b := admin("/admin/replicas"); c != 200 || !strings.Contains(b, `"id":"r0"`) {
		t.Errorf("/admin/replicas: %d %s", c, b)
	}
	if resp, _ := post(t, h.srv.URL+"/admin/explain/chat", chatBody); resp.StatusCode != http.StatusNotFound {
		t.Errorf("explain on the API handler: %d; want 404", resp.StatusCode)
	}
	if resp, b := post(t, h.admin.URL+"/admin/explain/chat", chatBody); resp.StatusCode != 200 || !strings.Contains(string(b), `"chosen"`) {
		t.Errorf("explain on the admin handler: %d %s", resp.StatusCode, b)
	}
	h.set.Replace(nil)
	if c, _ := get("/ready"); c != 503 {
		t.Errorf("/ready without replicas: %d; want 503", c)
	}
}

// FuzzHandler sends arbitrary bodies to both completion endpoints: the
// router must answer 200 (proxied) or an OpenAI-shaped error, never panic.
func FuzzHandler(f *testing.F) {
	f.Add(true, []byte(chatBody))
	f.Add(false, []byte(`{"model":"m","prompt":[1,2,3]}`))
	f.Add(true, []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"stream":true}`))
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) }))
	defer ok.Close()
	h := newHarness(f, 1<<16, ok.Listener.Addr().String())
	f.Fuzz(func(t *testing.T, chat bool, body []byte) {
		path := "/v1/completions"
		if chat {
			path = "/v1/chat/completions"
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body)))
		h.gw.Handler().ServeHTTP(rec, req)
		if rec.Code == http.StatusOK {
			return
		}
		var e struct{ Error openai.Error }
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Message == "" {
			t.Fatalf("status %d with a body that is not an OpenAI error: %q", rec.Code, rec.Body.String())
		}
	})
}

// waiting is how many requests wait in the planner's admission queue.
func (h *harness) waiting() int {
	n, _ := h.planner.QueueDepth()
	return n
}
