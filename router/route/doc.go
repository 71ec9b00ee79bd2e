// Package route is the router's planner: the one place a request's
// routing decision is made, whichever API it arrived on.
//
// A request's plan is built in one pass (Planner.Plan):
//
//  1. parse the body for its API (router/openai) and check that the
//     tenant may use the model, salting an isolated tenant's cache;
//  2. compute the prompt's block keys with the engine's block size
//     (router/prompt);
//  3. charge the tenant's limits (router/ratelimit);
//  4. wait in the fair admission queue while every replica is busy
//     (router/admission), then build the candidates (router/replicas:
//     the prompt's holders and a sample on a large fleet, every replica
//     when those cannot take it) and schedule (router/scheduler);
//  5. on a model with prefill and decode replicas, schedule the decode
//     step and, when the decode replica does not cache enough of the
//     prompt, the prefill step: disaggregation is a scheduling profile,
//     not a separate path.
//
// The plan lists the replicas to try in order (Attempt) with their
// addresses, the tenant's hold on its limits, for a disaggregated
// request the prefill step's replicas, and, when the scheduler's
// replicator proposes one, an idle replica to copy the prompt's hot
// prefix to (Plan.Warm, which the caller sends the prompt's prefill alone
// and reports with Plan.Warming). The caller sends the request and
// tells the plan what happened (Plan.Sent, Plan.Served), which feeds the
// scheduler's observers, the metrics and the decision log; it gives the
// plan back with Planner.Release.
//
// The same planner reschedules a stream whose replica failed mid-way
// (Planner.Reschedule, for router/gateway's migration), places requests
// that need a replica but no prompt decision (Planner.Place and
// PlaceAny, for vLLM's /tokenize, /detokenize and /version: model access
// and request limits, the scheduler's filters and load, nothing learned),
// explains a decision without sending it (Planner.Explain, for the admin
// API), and lists models and replicas for /v1/models and /admin/replicas.
//
// When the request's context carries a recorded trace span
// (router/tracing), Plan adds the decision's span and, within it, the
// admission wait's (trace.go): the chosen replica, its match mode and
// predicted cache, each scorer's part of the winning total.
//
// Session affinity is keyed by tenant and session id, so one tenant can
// neither follow nor re-pin another's session by sending its id.
//
// Why a package of its own: the decision used to live in the HTTP
// gateway, interleaved with reading bodies and proxying, and each new
// API or step (P/D, migration) scheduled again from inside the HTTP
// layer. Here the policy is in one place and the gateway is left with
// HTTP, the proxy (policy-free, as httputil.ReverseProxy is), the P/D
// transport and migration's streams. internal/tests/layering checks that
// the gateway reaches the scheduler only through this package.
package route
