package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/tracing"
)

// engineFunc answers engine requests in process, so that a benchmark
// measures the router's work and not the loopback network's.
type engineFunc func(*http.Request) *http.Response

func (f engineFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r), nil }

// recorder is a ResponseRecorder that, like a server's response writer,
// can be asked for a close notification (the reverse proxy asks).
type recorder struct{ *httptest.ResponseRecorder }

func (recorder) CloseNotify() <-chan bool { return nil }

// BenchmarkTracing is tracing's cost per routed request: the whole
// gateway path (parse, tokenize, hash, admission, schedule, proxy) of a
// chat request, served by an in-process engine, with tracing off, on but
// sampling no trace, on at 1% and on at 100%. Spans go to a real OTLP/HTTP
// exporter batching to a loopback receiver that discards them; what the
// batching costs off the request path shares the machine's CPUs and
// shows in the figures too.
func BenchmarkTracing(b *testing.B) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer receiver.Close()
	const answer = `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`
	engine := engineFunc(func(r *http.Request) *http.Response {
		_, _ = io.Copy(io.Discard, r.Body)
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(answer)), Request: r}
	})
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("a fairly long prompt ", 100) + `"}]}`)
	for _, c := range []struct {
		name  string
		on    bool
		ratio float64
	}{{"off", false, 0}, {"on-sampled-0", true, 0}, {"on-sampled-1pct", true, 0.01}, {"on-sampled-100pct", true, 1}} {
		b.Run(c.name, func(b *testing.B) {
			var p *tracing.Provider
			if c.on {
				var err error
				if p, err = tracing.New(context.Background(), tracing.Options{Endpoint: receiver.URL + "/v1/traces", SampleRatio: c.ratio}); err != nil {
					b.Fatal(err)
				}
				defer func() { _ = p.Shutdown(context.Background()) }()
			}
			h := newHarnessWith(b, func(d *testDeps, _ *scheduler.Config) {
				d.Transport = engine
				if p != nil {
					d.Tracer = p.TracerProvider()
				}
			}, "10.0.0.1:8000", "10.0.0.2:8000")
			handler := h.gw.Handler()
			b.ReportAllocs()
			n, cpu0 := 0, cpuTime()
			for b.Loop() {
				n++
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				w := recorder{httptest.NewRecorder()}
				handler.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			// The process's CPU time, the exporter's batching included: on a
			// shared machine wall time mostly measures waiting for a core.
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(n), "cpu-ns/op")
		})
	}
}
