package gateway

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// recorded is a tracer provider recording every span in memory.
type recorded struct {
	*tracetest.SpanRecorder
	tp *sdktrace.TracerProvider
}

func newRecorded() recorded {
	rec := tracetest.NewSpanRecorder()
	return recorded{SpanRecorder: rec, tp: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))}
}

func (r recorded) traced(d *testDeps, _ *scheduler.Config) { d.Tracer = r.tp }

// ended waits for the server span named server to end (after the
// client has read its answer), then returns every ended span by name.
func (r recorded) ended(t *testing.T, server string) map[string][]sdktrace.ReadOnlySpan {
	t.Helper()
	var by map[string][]sdktrace.ReadOnlySpan
	poll.Until(t, "the server span", func() bool {
		by = map[string][]sdktrace.ReadOnlySpan{}
		for _, s := range r.Ended() {
			by[s.Name()] = append(by[s.Name()], s)
		}
		return len(by[server]) == 1
	})
	return by
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// parentOf checks that child is a span of kind kind under parent.
func parentOf(t *testing.T, parent, child sdktrace.ReadOnlySpan, kind trace.SpanKind) {
	t.Helper()
	if child.Parent().SpanID() != parent.SpanContext().SpanID() || child.SpanContext().TraceID() != parent.SpanContext().TraceID() || child.SpanKind() != kind {
		t.Errorf("%s (%v) has parent %v; want a %v span under %s %v", child.Name(), child.SpanKind(), child.Parent().SpanID(), kind, parent.Name(), parent.SpanContext().SpanID())
	}
}

// headerTap records the traceparent of each request a handler is sent.
type headerTap struct {
	mu   sync.Mutex
	seen []string
}

func (h *headerTap) wrap(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, r.Header.Get("traceparent"))
		h.mu.Unlock()
		next(w, r)
	}
}

// TestTraceRetries: a request retried after a 503 has one upstream span
// per engine request under its server span, the first an error with the
// 503, each engine sent a traceparent naming its own span; the decision
// and admission spans sit under the server span, which continues the
// client's trace.
func TestTraceRetries(t *testing.T) {
	rec := newRecorded()
	var failed atomic.Bool
	tap := &headerTap{}
	engine := tap.wrap(func(w http.ResponseWriter, r *http.Request) {
		if failed.CompareAndSwap(false, true) {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"text_completion","choices":[]}`))
	})
	h := newHarnessWith(t, rec.traced, backend(t, engine), backend(t, engine))
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/v1/completions", strings.NewReader(`{"model":"m","prompt":"hello there"}`))
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	by := rec.ended(t, "POST /v1/completions")
	srv := by["POST /v1/completions"][0]
	if srv.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || srv.Parent().SpanID().String() != "00f067aa0ba902b7" || srv.SpanKind() != trace.SpanKindServer {
		t.Errorf("server span %v under %v; want the client's trace and span", srv.SpanContext(), srv.Parent())
	}
	route, adm := by["llmgw.route"], by["llmgw.admission"]
	if len(route) != 1 || len(adm) != 1 {
		t.Fatalf("route spans %d, admission spans %d; want one each", len(route), len(adm))
	}
	parentOf(t, srv, route[0], trace.SpanKindInternal)
	parentOf(t, route[0], adm[0], trace.SpanKindInternal)
	ups := by["llmgw.upstream"]
	if len(ups) != 2 {
		t.Fatalf("%d upstream spans; want one per engine request (2)", len(ups))
	}
	first, second := ups[0], ups[1]
	if attr(first, "llmgw.attempt") != "1" {
		first, second = second, first
	}
	for i, c := range []struct {
		s           sdktrace.ReadOnlySpan
		attempt     string
		status      string
		errorStatus bool
	}{{first, "1", "503", true}, {second, "2", "200", false}} {
		parentOf(t, srv, c.s, trace.SpanKindClient)
		if attr(c.s, "llmgw.attempt") != c.attempt || attr(c.s, "http.response.status_code") != c.status || (c.s.Status().Code == codes.Error) != c.errorStatus {
			t.Errorf("upstream %d: attempt %s status %s span status %v", i, attr(c.s, "llmgw.attempt"), attr(c.s, "http.response.status_code"), c.s.Status())
		}
	}
	tap.mu.Lock()
	defer tap.mu.Unlock()
	want := []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-" + first.SpanContext().SpanID().String() + "-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-" + second.SpanContext().SpanID().String() + "-01"}
	if len(tap.seen) != 2 || tap.seen[0] != want[0] || tap.seen[1] != want[1] {
		t.Errorf("engines saw %q; want %q", tap.seen, want)
	}
}

// TestTracePrefillStep: a disaggregated request's prefill request is an
// llmgw.prefill client span under the server span, beside the decode
// step's llmgw.upstream, and the decision names the prefill replica.
func TestTracePrefillStep(t *testing.T) {
	rec := newRecorded()
	h := newPDHarness(t, rec.traced, replicas.RolePrefill, replicas.RoleDecode)
	resp, b := post(t, h.srv.URL+"/v1/completions", `{"model":"m","prompt":"`+pdPrompt+`","max_tokens":5}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	by := rec.ended(t, "POST /v1/completions")
	srv := by["POST /v1/completions"][0]
	pre, up, route := by["llmgw.prefill"], by["llmgw.upstream"], by["llmgw.route"]
	if len(pre) != 1 || len(up) != 1 || len(route) != 1 {
		t.Fatalf("prefill spans %d, upstream %d, route %d; want one each", len(pre), len(up), len(route))
	}
	parentOf(t, srv, pre[0], trace.SpanKindClient)
	parentOf(t, srv, up[0], trace.SpanKindClient)
	if attr(pre[0], "llmgw.replica") != "p0" || attr(up[0], "llmgw.replica") != "d0" || attr(route[0], "llmgw.route.prefill_replica") != "p0" {
		t.Errorf("prefill on %q, decode on %q, decision's prefill replica %q; want p0, d0, p0",
			attr(pre[0], "llmgw.replica"), attr(up[0], "llmgw.replica"), attr(route[0], "llmgw.route.prefill_replica"))
	}
}

// TestTraceMigration: a stream whose replica dies mid-way has an
// llmgw.migrate span under its server span, naming the failed replica
// and the one that continued, with the continuation's engine request
// under it.
func TestTraceMigration(t *testing.T) {
	rec := newRecorded()
	e := &migratingEngine{}
	h := newHarnessWith(t, func(d *testDeps, c *scheduler.Config) {
		d.Options.Migration = Migration{Enabled: true, MaxAttempts: 2, MaxTokens: 100}
		rec.traced(d, c)
	}, backend(t, e.serve), backend(t, e.serve))
	resp, b := post(t, h.srv.URL+"/v1/completions", `{"model":"m","prompt":"tell me","max_tokens":8,"stream":true}`)
	if resp.StatusCode != http.StatusOK || strings.Count(string(b), "[DONE]") != 1 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	by := rec.ended(t, "POST /v1/completions")
	srv := by["POST /v1/completions"][0]
	mig, ups := by["llmgw.migrate"], by["llmgw.upstream"]
	if len(mig) != 1 || len(ups) != 2 {
		t.Fatalf("migrate spans %d, upstream spans %d; want 1 and 2", len(mig), len(ups))
	}
	parentOf(t, srv, mig[0], trace.SpanKindInternal)
	var first, cont sdktrace.ReadOnlySpan
	for _, u := range ups {
		if u.Parent().SpanID() == mig[0].SpanContext().SpanID() {
			cont = u
		} else {
			first = u
		}
	}
	if first == nil || cont == nil {
		t.Fatalf("no upstream span under the migrate span")
	}
	parentOf(t, srv, first, trace.SpanKindClient)
	failedOn, movedTo := attr(first, "llmgw.replica"), attr(cont, "llmgw.replica")
	if failedOn == movedTo || attr(mig[0], "llmgw.migrate.failed") != "[\""+failedOn+"\"]" || attr(mig[0], "llmgw.replica") != movedTo {
		t.Errorf("migrate span failed=%s replica=%s; first engine request on %s, continuation on %s",
			attr(mig[0], "llmgw.migrate.failed"), attr(mig[0], "llmgw.replica"), failedOn, movedTo)
	}
}

// TestTraceNoReplicaAnswered: when every engine request fails, each
// upstream span is an error and the server span records the client's
// 502 as one; a health probe makes no span.
func TestTraceNoReplicaAnswered(t *testing.T) {
	rec := newRecorded()
	refuse := func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}
	h := newHarnessWith(t, rec.traced, backend(t, refuse), backend(t, refuse))
	if resp, _ := post(t, h.srv.URL+"/v1/completions", `{"model":"m","prompt":"hello"}`); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d; want 502", resp.StatusCode)
	}
	if resp, _ := get(t, h.srv.URL+"/health"); resp.StatusCode != http.StatusOK {
		t.Fatalf("health: status %d", resp.StatusCode)
	}
	by := rec.ended(t, "POST /v1/completions")
	srv := by["POST /v1/completions"][0]
	if attr(srv, "http.response.status_code") != "502" || srv.Status().Code != codes.Error {
		t.Errorf("server span status %s, %v; want 502 and an error", attr(srv, "http.response.status_code"), srv.Status())
	}
	ups := by["llmgw.upstream"]
	if len(ups) != 2 {
		t.Fatalf("%d upstream spans; want 2", len(ups))
	}
	for _, u := range ups {
		if u.Status().Code != codes.Error {
			t.Errorf("upstream span on %s: status %v; want an error", attr(u, "llmgw.replica"), u.Status())
		}
	}
	if n := len(rec.Ended()); n != 5 { // server, route, admission, two upstream
		t.Errorf("%d spans ended; want 5 (none for /health)", n)
	}
}
