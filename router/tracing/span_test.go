package tracing

import (
	"context"
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestStartWithoutRecordingParent: with no span in the context, or an
// unsampled one, Start returns the context as it is and a span that
// records nothing, without allocating: tracing off costs the hot path
// nothing.
func TestStartWithoutRecordingParent(t *testing.T) {
	unsampled := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2},
	}))
	for name, ctx := range map[string]context.Context{"no span": context.Background(), "unsampled": unsampled} {
		got, span := Start(ctx, "child", trace.SpanKindInternal)
		if got != ctx || span.IsRecording() {
			t.Errorf("%s: context replaced %v, recording %v; want the same context and a no-op span", name, got != ctx, span.IsRecording())
		}
		if n := testing.AllocsPerRun(100, func() {
			_, s := Start(ctx, "child", trace.SpanKindInternal)
			s.End()
		}); n != 0 {
			t.Errorf("%s: %v allocations per Start; want 0", name, n)
		}
	}
}

// TestStartUnderRecordingParent: under a recorded span, Start makes a
// child with the parent's provider, in the parent's trace.
func TestStartUnderRecordingParent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, parent := tp.Tracer("t").Start(context.Background(), "parent")
	_, child := Start(ctx, "child", trace.SpanKindClient)
	child.End()
	parent.End()
	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans ended; want 2", len(ended))
	}
	c := ended[0]
	if c.Name() != "child" || c.SpanKind() != trace.SpanKindClient || c.Parent().SpanID() != parent.SpanContext().SpanID() ||
		c.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("child %q kind %v parent %v trace %v; want a client span under %v in trace %v",
			c.Name(), c.SpanKind(), c.Parent().SpanID(), c.SpanContext().TraceID(), parent.SpanContext().SpanID(), parent.SpanContext().TraceID())
	}
}

// TestPropagation: Inject writes the W3C traceparent of ctx's span
// context, sampled flag included, and nothing without one; Extract reads
// it back. The vector is the W3C Trace Context specification's example.
func TestPropagation(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	in := http.Header{"Traceparent": {tp}, "Tracestate": {"congo=t61rcWkgMzE"}}
	ctx := Extract(context.Background(), in)
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsSampled() || !sc.IsRemote() {
		t.Fatalf("extracted %+v", sc)
	}
	out := http.Header{}
	Inject(ctx, out)
	if out.Get("traceparent") != tp || out.Get("tracestate") != "congo=t61rcWkgMzE" {
		t.Errorf("injected %v; want %s and its tracestate", out, tp)
	}
	none := http.Header{}
	Inject(context.Background(), none)
	if len(none) != 0 {
		t.Errorf("injected %v without a span context; want nothing", none)
	}
	if sc := trace.SpanContextFromContext(Extract(context.Background(), http.Header{"Traceparent": {"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}})); sc.IsValid() {
		t.Errorf("an all-zero trace id was taken: %+v", sc)
	}
}
