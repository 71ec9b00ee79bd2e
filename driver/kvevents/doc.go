// Package kvevents owns KV-cache event intake for the vllm driver: a ZeroMQ
// SUB listener per leader shard and data-parallel rank, the replay client for
// vLLM's ROUTER socket, per-publisher sequence tracking, the decoder for every
// vLLM event schema, each replica's block state keyed by canonical block keys
// (internal/blockkey), the store that many router sessions drain
// (snapshot first, then net deltas), and the sessions that carry those
// drains to every router instance over HTTP (internal/kvwire).
//
// It must not import router/..., gin, or the driver's own task code: the
// driver calls in here, and routers are reached only over the wire.
package kvevents
