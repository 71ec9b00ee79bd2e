// Package kvevents owns KV-cache event intake for the vllm driver: a ZeroMQ
// SUB listener per leader shard and data-parallel rank, the replay client for
// vLLM's ROUTER socket, per-publisher sequence tracking, the decoder for every
// vLLM event schema, each replica's block state keyed by canonical block keys
// (internal/blockkey), the store that many router sessions drain (snapshot
// first, then net deltas), and the sessions that carry those drains to every
// router instance over HTTP (internal/kvwire).
//
// # How the driver uses it
//
// One Store per driver process and one Forwarder on it (routers from
// ConsulRouters). For each leader shard that asks for events: OpenIntake
// (an error means "start the engine without events" and is never fatal),
// pass Intake.EngineFlag() as --kv-events-config, remember Intake.Port() and
// ReplayPort() in the task state to bind them again after a plugin restart,
// and call Intake.EngineRestarted() before starting each new engine process:
// it announces the replica, holding nothing, so routers route an engine that
// has published nothing yet exact at once. When the shard stops:
// Intake.Close(), then Store.Remove(replica), which every router session
// delivers as "holds nothing".
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
// # KV-cache groups
//
// A hybrid model's engine keeps one KV-cache group per layer type (full
// attention, sliding window, Mamba) and names each event's group
// (group_idx; BlockStored also its kv_cache_spec_kind and window). The
// groups store blocks of the same engine hashes, so block state is kept
// per (rank, group): each group counts its own stores and removes, and a
// removal in one never ends another's residency. AllBlocksCleared clears
// every group of the rank. Each replica's layout (every group's kind,
// window and block size) is learnt from its events and sent with its
// blocks (kvwire version 2); to a router of version 1 a session sends only
// the primary full-attention group (kvwire.Primary).
//
// It must not import router/..., gin, or the driver's task code: the driver
// calls in here, and routers are reached only over the wire.
package kvevents
