// Package intake takes KV-cache events from the vLLM engines into a
// kvevents.Store: a ZeroMQ SUB listener per leader shard and data-parallel
// rank, connected to the ipc:// socket the engine binds in a directory only
// its user may enter (ipc.go) or bound on loopback TCP, the replay client for vLLM's ROUTER socket, per-publisher sequence
// tracking, and the decoder for every vLLM event schema (with its own
// msgpack reader, msgpack.go). It hands each decoded batch to a Sink,
// which the Store is.
//
// # Sequence rules, per rank
//
// Batches are applied in sequence order. The first batch seen, or a gap,
// triggers a replay of the missing range (from 0 on first contact); batches
// the replay already applied are skipped when they arrive live. A sequence
// at or below the last one seen live means the engine restarted: the rank's
// blocks are cleared first. Batches neither received nor replayable are
// counted as lost; blocks chained on a lost parent are tracked but never
// published, since their canonical key cannot be known.
//
// It imports driver/kvevents for the Store and the batch types, never
// driver/kvevents/forward: what reaches the routers is the forwarder's
// business, and a stalled router cannot slow intake.
package intake
