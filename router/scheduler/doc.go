// Package scheduler chooses the replica for each request, as a pipeline of
// plugins in the style of llm-d's scheduler: filters drop candidates that
// must not serve, weighted scorers rate the rest in [0, 1], and a picker
// chooses from the weighted totals. Plugins that keep history (approximate
// prefix, speculative credit, session affinity) learn through Observer when
// the router reports where a request went.
//
// plugin.go holds the interfaces; RegisterBuiltins in builtins.go is the one
// place the built-in plugins are listed; a Registry value (never a global)
// turns a Config into a Scheduler, decoding each plugin's parameters
// strictly, and an embedding program adds its own types to it (the router
// through server.WithPlugins). Scorers hand each other per-candidate facts
// through typed state keys (state.go): the prefix scorers write their
// cached-block Predictions, the ttft scorer reads them, and a plugin outside
// the package may do either. README.md documents every plugin and its
// parameters. The package holds llmgw's own policy only: other routers'
// policies, the baselines `llmgw bench` compares, are plugins in
// router/peerpolicy, built on the exported API alone (History,
// DecodeParams, Request.HistoryKeys and PromptSize are exported for such
// plugins).
//
// Scheduling runs on every request, so its path allocates nothing: Schedule
// works in scratch memory kept in the Request (Request.Reset keeps it for
// the next request; the router pools its Requests), and plugins pool their
// own (TestScheduleReusedRequestAllocatesNothing holds this).
//
// The package owns scheduling policy and the per-plugin state it needs. It
// reads the precise index through the PrefixIndex interface (router/index
// provides it) and each candidate's load as a load.Load value that its
// caller filled in (router/load keeps the counts; the scheduler only reads
// them). It must not import driver/..., HTTP frameworks, or other router
// packages besides router/index and router/load. Randomness and time are
// injected (Deps.Rand, Deps.Now) so every decision can be tested
// deterministically.
package scheduler
