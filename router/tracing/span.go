package tracing

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of every span the router makes.
const Scope = "github.com/llmgw/llmgw/router"

// propagator reads and writes W3C traceparent and tracestate, the
// headers vLLM takes trace context from (vllm/tracing.py TRACE_HEADERS).
var propagator = propagation.TraceContext{}

// Start starts a child of ctx's span named name, with the parent's
// provider. When ctx's span is not recording (tracing off, or this trace
// not sampled) it returns ctx and a no-op span without allocating, so
// callers may start spans on the hot path unconditionally; they set
// attributes only when span.IsRecording().
func Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noop.Span{}
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, trace.WithSpanKind(kind))
}

// Inject writes ctx's span context to h as traceparent (and tracestate)
// when ctx carries a valid one, sampled or not, so that the engine's
// spans join the trace or stay out of it as the router's do. Without a
// span context h is left as it is.
func Inject(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// Extract returns ctx with the remote span context of h's traceparent,
// when h carries a valid one.
func Extract(ctx context.Context, h http.Header) context.Context {
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// Record adds a finished child of ctx's span named name, from start to
// end, for a step whose times were taken where no span could be started
// (the cold-start hold reports its stages when they end). err, when not
// nil, marks the span as failed. Nothing happens when ctx's span is not
// recording.
func Record(ctx context.Context, name string, start, end time.Time, err error, attrs ...attribute.KeyValue) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return
	}
	_, span := parent.TracerProvider().Tracer(Scope).Start(ctx, name,
		trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End(trace.WithTimestamp(end))
}
