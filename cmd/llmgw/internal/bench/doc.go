// Package bench compares routing policies on one running fleet: for each
// policy it restarts the routers with that policy's scheduler block and
// router options (precise-prefix-unpinned turns pin_data_parallel_rank
// off, for shards with data-parallel ranks), empties every engine's
// prefix cache, replays one workload through the client and collects
// per-request results, then adds the offline oracle's bound and hands
// everything to the report. The oracle counts in the engines' own
// token ids: before the first policy, every prompt is tokenized on one of
// the fleet's engines (vLLM's /tokenize), so llmgw links no simulator code
// and a bench means the same against real engines. The disaggregated
// policy also restarts the shards, half with the prefill role and half
// with the decode role, and back to aggregated for a later policy.
//
// Subpackages do one job each: trace parses Mooncake traces, workload turns
// options or a trace into deterministic requests, oracle computes the best
// achievable prefix reuse, client sends requests to routers found through
// Consul DNS and measures them, report summarises and renders results.
//
// The package reaches the fleet only through the small Fleet interface
// below (cmd/llmgw/internal/fleet provides it); it must not import driver/... or
// router/... packages, which it meets only over HTTP and DNS; the
// engines' and routers' metrics pages it reads with the Prometheus
// project's text parser.
package bench
