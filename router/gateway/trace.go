package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/llmgw/router/route"
	"github.com/llmgw/llmgw/router/tracing"
)

// The gateway's spans (router/tracing), beside the planner's
// (route.SpanRoute, route.SpanAdmission). The server span is named by
// the HTTP semantic conventions ("POST /v1/chat/completions"); under
// it, each engine request is one SpanUpstream (a retry is the next one),
// a disaggregated request's prefill request a SpanPrefill, and the
// continuation of a stream whose replica failed a SpanMigrate holding
// the continuation's own SpanUpstream.
const (
	SpanUpstream = "llmgw.upstream"
	SpanPrefill  = "llmgw.prefill"
	SpanMigrate  = "llmgw.migrate"
)

// Attributes no semantic convention names.
const (
	attrAttempt       = attribute.Key("llmgw.attempt")
	attrMigrateFailed = attribute.Key("llmgw.migrate.failed")
)

// serverSpans starts each client request's server span, continuing the
// trace of the client's traceparent, and leaves it in the request's
// context for the planner and the proxy. Health and readiness probes are
// not traced: a load balancer's polling would crowd out the requests.
func serverSpans(tp trace.TracerProvider) gin.HandlerFunc {
	tr := tp.Tracer(tracing.Scope)
	return func(c *gin.Context) {
		r, path := c.Request, c.FullPath()
		if path == "/health" || path == "/ready" {
			return
		}
		name := r.Method
		if path != "" {
			name += " " + path
		}
		ctx, span := tr.Start(tracing.Extract(r.Context(), r.Header), name, trace.WithSpanKind(trace.SpanKindServer))
		defer func() {
			if p := recover(); p != nil { // a panic, or the proxy cutting a failed stream
				span.SetStatus(codes.Error, fmt.Sprint(p))
				span.End()
				panic(p)
			}
			if span.IsRecording() {
				st := c.Writer.Status()
				span.SetAttributes(semconv.HTTPResponseStatusCode(st))
				if st >= 500 {
					span.SetStatus(codes.Error, strconv.Itoa(st))
				}
			}
			span.End()
		}()
		if span.IsRecording() {
			scheme := "http"
			if r.TLS != nil {
				scheme = "https"
			}
			span.SetAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLPath(r.URL.Path),
				semconv.URLScheme(scheme), semconv.UserAgentOriginal(r.UserAgent()))
			if path != "" {
				span.SetAttributes(semconv.HTTPRoute(path))
			}
			if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
				span.SetAttributes(semconv.ClientAddress(host))
			}
		}
		c.Request = r.WithContext(ctx)
		c.Next()
	}
}

// startEngineSpan starts the client span of one request to replica a's
// engine (name SpanUpstream or SpanPrefill), the i-th tried, and puts its
// trace context on h, as the engine's own spans are to continue it. With
// ctx's span not recorded, h gets that span's context if it has one (an
// unsampled trace stays unsampled on the engine).
func startEngineSpan(ctx context.Context, name string, a route.Attempt, i int, h http.Header) trace.Span {
	ctx, span := tracing.Start(ctx, name, trace.SpanKindClient)
	tracing.Inject(ctx, h)
	if span.IsRecording() {
		span.SetAttributes(route.AttrReplica.String(a.Replica), semconv.GenAIRequestModel(a.Model), attrAttempt.Int(i+1))
		if host, port, err := net.SplitHostPort(a.Address); err == nil {
			p, _ := strconv.Atoi(port)
			span.SetAttributes(semconv.ServerAddress(host), semconv.ServerPort(p))
		}
	}
	return span
}

// endEngineSpan ends an engine request's span with the engine's status
// (0: none came) and err, why the router gave up on it (nil when the
// answer went to the client, or is a refusal the client gets as it is).
func endEngineSpan(span trace.Span, status int, err error) {
	if span.IsRecording() {
		if status != 0 {
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		}
		switch {
		case err != nil:
			span.SetStatus(codes.Error, err.Error())
		case status >= 500:
			span.SetStatus(codes.Error, strconv.Itoa(status))
		}
	}
	span.End()
}
