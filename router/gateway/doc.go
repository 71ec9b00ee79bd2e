// Package gateway is llmgw-router's OpenAI-compatible HTTP API (gin):
// /v1/chat/completions and /v1/completions routed to the best replica and
// proxied with httputil.ReverseProxy (SSE passed through per chunk, retries
// on the next-best replica before the first byte, client disconnect cancels
// upstream), /v1/models, /health and /ready on Handler; /metrics and an
// admin API that lists replicas and explains a routing decision on
// AdminHandler, for a listener tenants cannot reach. Routed answers name
// their replica and predicted cached tokens in X-Llmgw-* headers only when
// Deps.ExposeRouteHeaders says so, and a session id is capped at 128 bytes.
//
// It owns request handling, the proxy and the router's Prometheus metrics.
// It wires together router/openai (parsing, errors), router/prompt (keys),
// router/scheduler (the decision) and router/replicas (where to send); it
// must not import driver/....
package gateway
