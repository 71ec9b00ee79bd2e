// Package ingest turns drivers' KV updates (internal/kvwire) into the
// router's block index (router/index): a Sink for kvwire.Receiver that
// translates snapshots, resets, deletions and additions into Index calls on
// the replica's model index, and remembers which replicas have live KV state
// (exact routing mode) and which driver speaks for each (Owner).
//
// # Membership, one way
//
// The replica set tells the Sink of each replica that joins (Joined, with
// an ingest.Member: its model and its declared KV-cache group layout) and
// of each that leaves (Drop); the Sink keeps its own view of the set from
// those events and never asks the set anything, so the set, the Sink and
// the kvwire.Receiver feeding it are built in one order: Sink, Receiver,
// then the set (router/server's core). What Joined returns, the drivers
// that must resend a snapshot, the set hands to the Receiver. A Sink made
// with NewSink answers membership from the caller's ModelOf instead, for
// callers that keep no replica set to tell it (tests, benchmarks).
//
// The Sink's state is split by concern, under one lock: the membership
// view (members.go), the drivers' sessions (sessions.go), the state kept
// for replicas not listed yet (pending.go), the refusals for lack of room
// (refused.go), and the view the request path reads (published.go).
//
// # State that arrives before the replica
//
// A driver reports a replica as soon as its engine runs, while the router
// lists it only once Consul does (after the replica's health check passes),
// so state often arrives first. The Sink keeps it, bounded (Options: a
// replica count, a key count and an age; what is discarded is counted in
// Stats.Discarded and logged at debug level), follows it with the driver's
// deltas, and moves it into the index the moment the replica joins
// (Joined; with a caller's ModelOf, the replica's next update if that comes
// first): the replica is exact at once.
//
// The alternative, asking the driver for a snapshot when a replica joins,
// cannot be immediate: drivers post to routers and never the other way, so
// the request (kvwire.Receiver.Forget) is only answered by the driver's next
// update, which in a quiet fleet is its keep-alive, up to 10 s later. That
// path remains the fallback for state the Sink could not keep (discarded at
// a bound, or dropped when the replica left the set and its later deltas
// could not be followed): Joined names those drivers.
//
// # What an update costs
//
// The replica set asks Synced and Refused for every request's candidates,
// so the Sink publishes them as an immutable map replaced at the end of
// each update (statemap.go): the new version shares all but the touched
// replicas' paths with the one before. Kept state is bounded from its
// oldest (a heap by age) and refusals wait in queues by due time, so an
// update costs its events plus O(log n) per replica it names, whatever the
// fleet's size (BenchmarkDeltaUpdate).
//
// # Snapshots at the key cap
//
// A model's index is capped at the fleet's advertised KV blocks with
// slack (router/server's capacity). A snapshot's new keys enter the index
// before the old ones leave, so near the cap the two together can exceed
// it though the new state fits: the Sink then replaces once more, which
// counts the new state alone, and refuses the replica only if that does
// not fit either.
//
// The cap itself holds for GPU blocks, hybrid models included: a hybrid
// engine's KV-cache groups draw on one pool of num_gpu_blocks, and only
// the primary group's keys are in the model's (capped) index, the others
// in their own. Blocks offloaded to CPU by a KV connector are counted
// on their own: vLLM sizes the connector's buffer in its configuration,
// not in cache_config_info (whose num_cpu_blocks a V1 engine leaves 0 or
// None), while the driver indexes their events as the CPU tier, so a
// replica advertising no CPU blocks gets the router's index_cpu_ratio ×
// its GPU blocks of CPU room in the cap, and its CPU tier is not checked
// for oversize (router/server's capacity).
//
// It owns that per-replica KV bookkeeping (the ingest listener that wraps
// the Receiver is router/server's). It must not import driver/..., gin,
// the HTTP API or the replica set (router/replicas imports it, for Member):
// the replica set tells it which model a replica serves.
package ingest
