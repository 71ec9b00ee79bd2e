package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName is the service.name of the router's spans unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES set another.
const ServiceName = "llmgw-router"

// Options say where spans go and how many.
type Options struct {
	// Endpoint is the collector's OTLP/HTTP traces URL
	// (http://collector:4318/v1/traces).
	Endpoint string
	// SampleRatio is the share of traces without a parent recorded.
	SampleRatio float64
	// OnError, when set, is told of what the SDK cannot do (an export
	// the collector refused or never got). It becomes OpenTelemetry's
	// process-wide error handler, which otherwise writes to the standard
	// library's log; the last provider made sets it.
	OnError func(error)
}

// Provider makes the router's spans and sends them to the collector in
// batches, off the request path.
type Provider struct {
	tp *sdktrace.TracerProvider
}

// New starts a provider exporting to o.Endpoint. The exporter also reads
// the standard OTEL_EXPORTER_OTLP_* variables (headers, timeout,
// compression, TLS certificates); the endpoint given here wins over
// theirs. Nothing is sent until a span ends, so New does not fail when
// the collector is down: batches that cannot be sent are dropped, and
// o.OnError is told.
func New(ctx context.Context, o Options) (*Provider, error) {
	if o.OnError != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(o.OnError))
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(o.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("tracing: exporter for %s: %w", o.Endpoint, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(ServiceName)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithSchemaURL(semconv.SchemaURL),
	)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SampleRatio))),
	)
	return &Provider{tp: tp}, nil
}

// TracerProvider is what the gateway starts server spans with.
func (p *Provider) TracerProvider() trace.TracerProvider { return p.tp }

// Shutdown sends the spans still batched and stops the exporter, waiting
// at most until ctx ends. Call it after the API server has shut down, so
// that the last requests' spans are among those sent.
func (p *Provider) Shutdown(ctx context.Context) error {
	if err := p.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flush spans: %w", err)
	}
	return nil
}
