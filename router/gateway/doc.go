// Package gateway is llmgw-router's OpenAI-compatible HTTP API (gin):
// /v1/chat/completions and /v1/completions routed to the best replica and
// proxied with httputil.ReverseProxy (SSE passed through per chunk, retries
// on the next-best replica before the first byte, client disconnect cancels
// upstream), /v1/models, /health, /ready, /metrics, and an admin API that
// lists replicas and explains a routing decision.
//
// It owns request handling, the proxy and the router's Prometheus metrics.
// It wires together router/openai (parsing, errors), router/prompt (keys),
// router/scheduler (the decision), router/admission (who waits for a busy
// fleet, in what order) and router/replicas (where to send); it must not
// import driver/....
package gateway
