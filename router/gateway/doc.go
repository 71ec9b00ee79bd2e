// Package gateway is llmgw-router's OpenAI-compatible HTTP API (gin):
// /v1/chat/completions and /v1/completions planned by router/route and
// proxied with httputil.ReverseProxy (SSE passed through per chunk,
// retries on the next-best replica before the first byte, client
// disconnect cancels upstream), /v1/models, /health and /ready on
// Handler; /metrics and an admin API that lists replicas and explains a
// routing decision on AdminHandler, for a listener tenants cannot reach.
//
// The gateway owns HTTP and nothing of the decision. Each request is
// read (within Options.MaxBodyBytes), authenticated, and handed to the
// planner (route.Planner.Plan), which parses it, checks the tenant,
// computes the prompt's keys, charges the limits, admits and schedules
// it, and returns the replicas to try in order. The gateway then runs
// the plan: the proxy is policy-free (it tries the plan's attempts in
// order, reporting each outcome to the planner's breakers and load), the
// P/D transport (pdstep.go) sends the prefill request of a disaggregated
// plan before the decode request goes through the proxy like any other,
// and migration (migration.go, with router/migrate building the
// continuation and splicing its stream) continues a stream whose replica
// fails after its first byte on a replica the planner reschedules
// (route.Planner.Reschedule). internal/tests/layering fails if this
// package imports the scheduler, the replica set or the other decision
// packages directly.
//
// Routed answers name their replica and predicted cached tokens in
// X-Llmgw-* headers only when Options.ExposeRouteHeaders says so, and a
// session id is capped at 128 bytes.
//
// The OpenAI routes (not /health or /ready) authenticate the client's
// bearer key when an Authenticator is configured (401 in OpenAI's shape
// otherwise) and carry its tenant.Tenant in the request context; the
// planner answers a model the tenant may not use with a 404, as OpenAI
// does, and /v1/models lists only the tenant's models. Admitted
// responses carry the x-ratelimit-* headers, and the tenant's token
// charge is corrected from the response's usage. The client's
// Authorization header never reaches an engine.
package gateway
