// Package gateway is llmgw-router's OpenAI-compatible HTTP API (gin):
// /v1/chat/completions and /v1/completions routed to the best replica and
// proxied with httputil.ReverseProxy (SSE passed through per chunk, retries
// on the next-best replica before the first byte, client disconnect cancels
// upstream), /v1/models, /health and /ready on Handler; /metrics and an
// admin API that lists replicas and explains a routing decision on
// AdminHandler, for a listener tenants cannot reach. Routed answers name
// their replica and predicted cached tokens in X-Llmgw-* headers only when
// Deps.ExposeRouteHeaders says so, and a session id is capped at 128 bytes.
// A stream whose replica fails after its first byte continues on the
// next-best replica when Deps.Migration allows (migration.go, with
// router/migrate building the continuation and splicing its stream).
// It keeps a fixed-size log of the last routed decisions and per-replica
// prediction tallies (RecentDecisions, PredictedFor) for the status page.
//
// A model with prefill and decode replicas (replicas.Role) is served in
// two steps, vLLM's NixlConnector protocol (router/disagg): pdschedule.go
// decides the decode replica, whether it prefills the prompt itself, and
// the prefill replica; pdstep.go runs the prefill request before the
// proxy sends the decode request as any other.
//
// It owns request handling, the proxy and the router's Prometheus metrics.
// It wires together router/openai (parsing, errors), router/prompt (keys),
// router/scheduler (the decision), router/load (requests in flight per
// replica), router/admission (who waits for a busy fleet, in what order)
// and router/replicas (where to send); it must not import driver/....
//
// The OpenAI routes (not /health or /ready) authenticate the client's
// bearer key when an Authenticator is configured (401 in OpenAI's shape
// otherwise) and carry its tenant.Tenant in the request context; a model
// the tenant may not use is a 404, as OpenAI answers, and /v1/models lists
// only the tenant's models. A tenant's limits (router/ratelimit) are
// charged once the prompt is counted, answered with 429, Retry-After and
// the x-ratelimit-* headers, which admitted responses carry too; the
// token charge is corrected from the response's usage. An isolated
// tenant's requests get its cache_salt, in the forwarded body and in the
// prompt's block keys alike. The client's Authorization header never
// reaches an engine.
package gateway
