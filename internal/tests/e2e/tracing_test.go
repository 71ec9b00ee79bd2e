package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/testkit/otlpcollector"
	"github.com/llmgw/llmgw/internal/testkit/otlpsink"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/server"
)

// The client's trace: the W3C Trace Context specification's example ids,
// sampled.
const (
	clientTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientParent = "00f067aa0ba902b7"
)

// engineTap is an engine seen through a proxy that records the trace
// headers of each inference request it is sent: what vLLM would read
// (its TRACE_HEADERS, traceparent and tracestate).
type engineTap struct {
	*sim
	mu           sync.Mutex
	traceparents []string // one per request, "" when it carried none
}

func tapEngine(t *testing.T, s *sim) *engineTap {
	t.Helper()
	e := &engineTap{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: s.addr})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Inference requests only: the router also reads the engine's
		// /v1/models (its adapters) on a timer of its own, untraced.
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/") {
			e.mu.Lock()
			e.traceparents = append(e.traceparents, r.Header.Get("traceparent"))
			e.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e.sim = &sim{Proc: s.Proc, addr: strings.TrimPrefix(srv.URL, "http://")}
	return e
}

func (e *engineTap) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.traceparents...)
}

// tracedRouter is a router over one tapped engine found in Consul,
// with edit applied to its configuration.
func tracedRouter(t *testing.T, edit func(*config.Config)) (*server.Server, *engineTap) {
	t.Helper()
	agent := consultest.Start(t)
	eng := tapEngine(t, startSim(t, "--sim-latency=false"))
	registerReplica(t, agent.Client, "t-0/main", eng.sim, false)
	c := routerConfig(token)
	c.Consul.Address, c.Consul.Services = agent.Addr, []string{"vllm"}
	edit(&c)
	r := startRouter(t, c)
	poll.Until(t, "the replica from consul", func() bool { return len(r.Replicas().ForModel(model)) == 1 })
	return r, eng
}

func postTraced(t *testing.T, router, traceparent string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+router+"/v1/completions", strings.NewReader(completion(longPrompt(7), true)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "[DONE]") {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
}

// TestTracingToOTLP: a request whose client sent a sampled traceparent
// is traced though the router samples no trace of its own (ratio 0,
// parent-based): its spans reach the OpenTelemetry Collector's own OTLP
// receiver, over OTLP/HTTP, in the client's trace, the server span under the client's span and the
// decision, admission and engine request under it; the engine is sent a
// traceparent naming the same trace and the engine request's span. A
// request without a traceparent is not sampled, exports nothing, and
// still carries an unsampled traceparent to the engine.
func TestTracingToOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	sink := otlpcollector.Start(t)
	r, eng := tracedRouter(t, func(c *config.Config) {
		c.Tracing = config.Tracing{Endpoint: sink.Endpoint(), SampleRatio: 0}
	})
	postTraced(t, r.Addr(), "00-"+clientTrace+"-"+clientParent+"-01")
	postTraced(t, r.Addr(), "")
	r.Close() // flushes the spans

	spans := map[string]otlpsink.Span{}
	for _, s := range sink.Spans() {
		if s.TraceID != clientTrace {
			t.Errorf("span %q in trace %s; only the client's trace is sampled", s.Name, s.TraceID)
		}
		spans[s.Name] = s
	}
	srv, route, adm, up := spans["POST /v1/completions"], spans["llmgw.route"], spans["llmgw.admission"], spans["llmgw.upstream"]
	for _, c := range []struct {
		name         string
		s            otlpsink.Span
		parent, kind string
	}{
		{"server", srv, clientParent, "server"},
		{"route", route, srv.SpanID, "internal"},
		{"admission", adm, route.SpanID, "internal"},
		{"upstream", up, srv.SpanID, "client"},
	} {
		kinds := map[int32]string{1: "internal", 2: "server", 3: "client"}
		if c.s.SpanID == "" || c.s.ParentSpanID != c.parent || kinds[c.s.Kind] != c.kind || c.s.Service != "llmgw-router" {
			t.Errorf("%s span %+v; want a %s span under %s from llmgw-router", c.name, c.s, c.kind, c.parent)
		}
	}
	checkRouteAttrs(t, route.Attrs)
	if srv.Attrs["http.response.status_code"] != int64(200) || srv.Attrs["http.route"] != "/v1/completions" {
		t.Errorf("server span attributes %v", srv.Attrs)
	}
	if up.Attrs["llmgw.replica"] != "t-0/main" || up.Attrs["http.response.status_code"] != int64(200) {
		t.Errorf("upstream span attributes %v", up.Attrs)
	}
	seen := eng.seen()
	if len(seen) != 2 || seen[0] != "00-"+clientTrace+"-"+up.SpanID+"-01" {
		t.Fatalf("engine saw traceparents %q; want the client's trace under the upstream span %s first", seen, up.SpanID)
	}
	if f := strings.Split(seen[1], "-"); len(f) != 4 || f[1] == clientTrace || f[3] != "00" {
		t.Errorf("engine saw %q for the untraced request; want an unsampled traceparent of a trace of its own", seen[1])
	}
}

// checkRouteAttrs: the decision span names the model, the replica, the
// match mode and predicted cache, and its scorers' parts sum to the
// winning total.
func checkRouteAttrs(t *testing.T, a map[string]any) {
	t.Helper()
	if a["gen_ai.request.model"] != model || a["llmgw.replica"] != "t-0/main" || a["llmgw.route.mode"] != "approx" {
		t.Errorf("route span attributes %v; want the model, the replica and approx mode", a)
	}
	if _, ok := a["llmgw.route.cached_tokens"].(int64); !ok {
		t.Errorf("route span has no predicted cached tokens: %v", a)
	}
	sum, parts := 0.0, 0
	for k, v := range a {
		if strings.HasPrefix(k, "llmgw.route.score.") {
			sum += v.(float64)
			parts++
		}
	}
	total, _ := a["llmgw.route.score"].(float64)
	if parts == 0 || sum < total-1e-9 || sum > total+1e-9 {
		t.Errorf("%d scorer parts summing to %g; want some, summing to the total %g", parts, sum, total)
	}
}

// TestTracingOff: a router without a tracing endpoint exports nothing,
// even with the standard OTEL_EXPORTER_OTLP_* variables pointing at a
// receiver, and sends the engine no traceparent of its own.
func TestTracingOff(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	sink := otlpsink.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", sink.Endpoint())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", strings.TrimSuffix(sink.Endpoint(), otlpsink.Path))
	r, eng := tracedRouter(t, func(*config.Config) {})
	postTraced(t, r.Addr(), "")
	r.Close()
	if n := sink.Exports(); n != 0 {
		t.Errorf("%d exports reached the receiver; want none with tracing off", n)
	}
	if seen := eng.seen(); len(seen) != 1 || seen[0] != "" {
		t.Errorf("engine saw traceparents %q; want one request without any", seen)
	}
}
