// Package tracing exports OpenTelemetry spans of a request's life in the
// router over OTLP/HTTP, and carries W3C trace context between the
// client, the router and the engines.
//
// It is off unless the router is given an endpoint: the gateway then
// installs no middleware, every span start finds no recording parent
// and returns at once, and no traceparent header is added to what an
// engine is sent. On, each request gets a server span continuing the
// client's traceparent; the planner, the proxy, the P/D prefill step and
// mid-stream migration add children to it through Start, and Inject puts
// the current span's context on each engine request, as vLLM reads it
// (its TRACE_HEADERS) to parent its own llm_request span.
//
// Sampling is parent-based: a client's sampled flag decides for its own
// request, and a request without one is sampled at the configured ratio.
package tracing
