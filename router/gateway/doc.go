// Package gateway is llmgw-router's client-facing HTTP API (gin): every
// API vLLM serves, planned by router/route and proxied with
// httputil.ReverseProxy (SSE passed through per chunk, retries on the
// next-best replica before the first byte, client disconnect cancels
// upstream): /v1/chat/completions, /v1/completions, OpenAI's
// /v1/responses (responses.go), Anthropic's /v1/messages (messages.go),
// the pooling endpoints (pooling.go), vLLM's utility paths
// (utility.go), /v1/models, /health and /ready on Handler; /metrics and
// an admin API that lists replicas and explains a routing decision on
// AdminHandler, for a listener tenants cannot reach.
//
// A Responses or Messages request is converted to the chat request vLLM
// converts it to (router/responses, router/anthropic), and that is what
// the planner keys; the engine gets the client's API. The router keeps
// Responses conversations itself (Conversations, router/respstore) and
// sends engines stateless requests; on the Messages paths one writer
// (errorDialect) puts every router-made error in Anthropic's shape.
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
// (route.Planner.Reschedule). When the plan proposes a prefix copy
// (route.Plan.Warm), warm.go sends the prompt's prefill alone to that
// idle replica in a goroutine the gateway owns (Close cancels and waits
// for it), beside the request. internal/tests/layering fails if this
// package imports the scheduler, the replica set or the other decision
// packages directly.
//
// Routed answers name their replica and predicted cached tokens in
// X-Llmgw-* headers only when Options.ExposeRouteHeaders says so, and a
// session id is capped at 128 bytes.
//
// The API routes (not /health or /ready) authenticate the client's
// bearer key, or its x-api-key, when an Authenticator is configured (401 in OpenAI's shape
// otherwise) and carry its tenant.Tenant in the request context; the
// planner answers a model the tenant may not use with a 404, as OpenAI
// does, and /v1/models lists only the tenant's models. Admitted
// responses carry the x-ratelimit-* headers, and the tenant's token
// charge is corrected from the response's usage. The client's
// Authorization and x-api-key headers never reach an engine.
package gateway
