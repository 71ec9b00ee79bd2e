package tracing

import (
	"context"
	"net/http"
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
