// Package admission decides which waiting request gets the next try at a
// replica when every replica of a model is over its busy threshold. It
// replaces one shared FIFO queue, in which a single heavy client could
// starve everyone, with per-tenant queues served by weighted fair queueing
// inside strict priority bands.
//
// A Queue holds one pool per model (replicas of one model share capacity;
// two models never do). In a pool, waiters sit in bands by priority, the
// highest band served first; in a band, each tenant has its own FIFO, and
// each waiter carries a virtual finish tag (self-clocked fair queueing:
// start at the later of the band's virtual time and the tenant's last tag,
// finish 1/weight later). The head of the pool is the smallest tag of the
// highest non-empty band. A tenant sending ten times another's rate only
// lengthens its own queue: the light tenant's next request is tagged just
// after the request now being served.
//
// Capacity is not counted here; the caller's try (the scheduler) finds out.
// When capacity may have freed, the head alone gets a turn: on a Wake (a
// routed request ended, or one admitted from the queue started, so the
// load counts it and the next head can see whether room is left) and on a
// poll every Options.Poll (engine metrics can show room before a request
// ends). Freed capacity drains one request at a time in order; a failed
// try ends the turn. There is no thundering herd of retries.
//
// The uncontended path stays as cheap as the queue it replaces: when a
// model's pool is empty, Admit runs try once with no lock and no
// allocation (two atomic loads and a map read). Memory is bounded: a global
// cap (max_queue) and a per-tenant cap on waiters answer at once when full;
// bands are clamped to MinPriority..MaxPriority; a waiter whose client
// leaves is unlinked at once.
//
// Cold (cold.go) holds requests for a model scaled to zero replicas: the
// first asks a Starter (the router's Nomad scaler) to scale its job up,
// and every waiter is released when a replica passes its check. The hold
// is bounded per model and per tenant, and by a timeout; past them the
// router answers 429 (a share full) or 503 (no replica in time), with
// Retry-After. Cold.Reap scales a model back to zero once it has had no
// request, here or in flight on any router, for its idle time. The
// Starter makes each change once across routers; see nomad.Scaler.
//
// It imports router/tenant (who a request is for) and Prometheus only.
package admission
