package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/llmgw/internal/testkit/otlpsink"
)

// TestProviderExportsOnShutdown: spans reach an OTLP/HTTP receiver as
// llmgw-router's once Shutdown flushes the batch; with a sample ratio of
// 0 a new trace is dropped but one whose client sampled it is kept
// (parent-based sampling).
func TestProviderExportsOnShutdown(t *testing.T) {
	sink := otlpsink.Start(t)
	p, err := New(context.Background(), Options{Endpoint: sink.Endpoint(), SampleRatio: 0})
	if err != nil {
		t.Fatal(err)
	}
	tr := p.TracerProvider().Tracer(Scope)
	_, root := tr.Start(context.Background(), "unsampled root")
	root.End()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := Extract(context.Background(), http.Header{"Traceparent": {tp}})
	_, kept := tr.Start(ctx, "sampled by the client", trace.WithSpanKind(trace.SpanKindServer))
	kept.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := sink.Spans()
	if len(spans) != 1 {
		t.Fatalf("received %+v; want only the client-sampled span", spans)
	}
	s := spans[0]
	if s.Name != "sampled by the client" || s.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || s.ParentSpanID != "00f067aa0ba902b7" ||
		s.Kind != 2 || s.Service != ServiceName {
		t.Errorf("received %+v; want the server span in the client's trace, under its span, from %s", s, ServiceName)
	}
}

// TestProviderReportsRefusedExport: an export the collector refuses
// reaches OnError, so the router's log says spans were lost.
func TestProviderReportsRefusedExport(t *testing.T) {
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer refuse.Close()
	var mu sync.Mutex
	var errs []error
	p, err := New(context.Background(), Options{Endpoint: refuse.URL + "/v1/traces", SampleRatio: 1, OnError: func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.TracerProvider().Tracer(Scope).Start(context.Background(), "lost")
	span.End()
	shutdownErr := p.Shutdown(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if len(errs) == 0 || !strings.Contains(errs[0].Error(), "400") {
		t.Errorf("OnError got %v (Shutdown: %v); want the collector's 400", errs, shutdownErr)
	}
}
