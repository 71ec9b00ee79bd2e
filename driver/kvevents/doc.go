// Package kvevents holds the vllm driver's KV-cache block state, where its
// two event pipelines meet. The intake (driver/kvevents/intake) takes each
// engine's events over ZeroMQ, decodes them into Batches and applies them
// to the Store; the forwarder (driver/kvevents/forward) opens a Session on
// the Store per router instance and carries its drains over HTTP
// (internal/kvwire). The Store keeps each replica's blocks keyed by
// canonical block keys (internal/blockkey), per data-parallel rank and
// tier, and every Session drains it snapshot first, then net deltas.
//
// The dependencies point at this package only: intake -> kvevents <-
// forward, and neither of the two imports the other. What they share is
// here: Event and Batch (the decoded form of vLLM's KVEventBatch), the
// Store and its Sessions.
//
// # How the driver uses it
//
// One Store per driver process (NewStore) and one forwarder on it:
// forward.Start with forward.ConsulRouters, wrapped in forward.HTTPS with a
// forward.TLSClient when the routers take updates over TLS. That, Open,
// Config and Intake from the intake, and the Store's Remove and Blocks are
// all the driver uses of these packages.
//
// For each leader shard that asks for events: intake.Open (an error means
// "start the engine without events" and is never fatal), pass
// Intake.EngineFlag() as --kv-events-config, remember Intake.Dir() (the
// engine's ipc:// sockets, which the listeners connect to again after a
// plugin restart) or, over TCP, Intake.Port() and ReplayPort() (bound
// again after a plugin restart) in the task state, and call Intake.EngineRestarted() before starting each new
// engine process: it announces the replica, holding nothing, so routers
// route an engine that has published nothing yet exact at once; after a
// plugin restart, beside a running engine, call Intake.Resumed() instead.
// When the
// shard stops: Intake.Close(), then Store.Remove(replica), which every
// router session delivers as "holds nothing".
//
// Blocks chained on a parent the intake lost are tracked but never
// published, since their canonical key cannot be known (the intake's
// package comment has the sequence rules).
//
// # KV-cache groups
//
// A hybrid model's engine keeps one KV-cache group per layer type (full
// attention, sliding window, Mamba) and names each event's group
// (group_idx; BlockStored also its kv_cache_spec_kind and window). The
// groups store blocks of the same engine hashes, so block state is kept
// per (rank, group): each group counts its own stores and removes, and a
// removal in one never ends another's residency. A Mamba or
// sliding-window group skips its null blocks (positions it keeps no state
// for) in a BlockStored: its block_hashes name the kept blocks while
// token_ids span the whole range, null blocks first. A kept block's key is
// then another group's key for the same hash, or the chain through the
// null blocks' tokens. AllBlocksCleared clears every group of the rank. Each replica's layout (every group's kind,
// window and block size) is learnt from its events and sent with its
// blocks (kvwire version 2); to a router of version 1 a session sends only
// the primary full-attention group (kvwire.Primary).
//
// It must not import router/..., gin, or the driver's task code: the driver
// calls in here, and routers are reached only over the wire.
package kvevents
