// Package ingest turns drivers' KV updates (internal/kvwire) into the
// router's block index (router/index): a Sink for kvwire.Receiver that
// translates snapshots, resets, deletions and additions into Index calls on
// the replica's model index, and remembers which replicas have live KV state
// (exact routing mode) and which driver speaks for each.
//
// It owns that per-replica KV bookkeeping, and the ingest HTTP handler that
// wraps the Receiver with metrics. It must not import driver/..., gin, or the
// HTTP API; the replica set tells it which model a replica serves.
package ingest
