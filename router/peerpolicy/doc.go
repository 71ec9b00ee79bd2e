// Package peerpolicy expresses other routers' published routing policies
// as llmgw scheduler plugins, so that `llmgw bench` (make bench-policies)
// runs each peer's rule beside llmgw's default on the same fleet, the same
// workload and the same router binary: Dynamo's KV router cost
// (dynamo-cost), the SGLang Model Gateway's cache_aware policy
// (sglang-cache-aware), llm-d's inference scheduler scorers (llmd-queue,
// llmd-kv-utilization, llmd-precise-prefix) and AIBrix's prefix-cache
// algorithm (aibrix-prefix-cache). docs/PEER_POLICIES.md names the version
// of each rule followed, its defaults and where llmgw's version differs;
// cmd/llmgw/internal/bench/peers.go holds the configurations the bench
// runs.
//
// The policies are benchmark baselines, not llmgw's scheduling policy, so
// they live outside router/scheduler, which holds only llmgw's own
// filters, scorers and pickers. They reach the scheduler through the seam
// any outside plugin uses: Register has the signature server.WithPlugins
// takes, and adds the six types to the router's scheduler.Registry after
// the built-ins. The package uses only the scheduler's exported API (the
// plugin interfaces, the cached-block Predictions, scheduler.History for
// the routing history two of them keep, scheduler.DecodeParams for strict
// parameters); it may import router/scheduler and the standard library
// and nothing else (internal/tests/layering holds both sides of that:
// router/scheduler may not import this package nor register these types).
//
// cmd/llmgw-router always registers them. A router config names them like
// any other plugin (scheduler { scorer "dynamo-cost" { weight = 1 } ... }),
// and the bench starts the shipped binary, so the same binary that serves
// production runs every baseline; a build tag or flag would let a bench
// run a router that silently lacks them. Registering costs a production
// router nothing while its config names none of them: a plugin is built
// only when its config names it. A custom build of the router (its own
// main calling server.Run) gets them only by passing
// server.WithPlugins(peerpolicy.Register) itself.
package peerpolicy
