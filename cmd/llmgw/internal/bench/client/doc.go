// Package client sends workload requests to llmgw routers and measures
// them the way a user sees them: time to the first token, the gaps between
// tokens, end-to-end time, the final status and the usage the engine
// reported (prompt and cached tokens).
//
// Routers are found through Consul DNS (SRV records of
// llmgw-router.service.consul give hosts and ports). A request that fails
// before its first byte arrives (connection refused or reset, a 5xx, a 429)
// is retried on another router, so losing a router loses only requests
// whose answer had started streaming. Run replays a whole workload open
// loop: each request leaves at its scheduled time whatever the others do.
//
// It imports cmd/llmgw/internal/bench/workload and the standard library only.
package client
