// Package kvwire defines the messages a driver sends to a router about the
// KV-cache blocks its replicas hold, and the receiving half that the
// router's ingest endpoint wraps: decoding, authentication with the shared
// token, and per-driver session sequencing.
//
// # Protocol (version 4)
//
// A driver keeps one session per router instance. Every flush it sends one
// Update as the body of an HTTP POST to Path, msgpack-encoded (Content-Type
// ContentType), with "Authorization: Bearer <token>".
//
//   - A session starts with a snapshot (Snapshot true): the full block state
//     of every replica the driver knows. The receiver replaces everything it
//     held from that Driver with it; replicas not listed hold nothing.
//   - Later updates carry the net effect since the previous one: per
//     replica, optionally Reset (drop everything held for the replica), then
//     Del, then Add, per (data-parallel rank, tier) group. A block stored and
//     evicted between two flushes never appears.
//   - Seq increases by one per update within an Epoch (a random number the
//     driver picks per session). A delta whose Epoch differs from the
//     receiver's, or whose Seq is not the last one plus one, is answered
//     409 with "snapshot required"; the driver then sends a snapshot. A
//     repeat of the last Seq (a retry after a lost answer) is acknowledged
//     without being applied again.
//   - A driver sends at least every keep-alive interval (an empty delta if
//     nothing changed). Receiver.Expire drops drivers not heard from since a
//     cutoff, handing the Sink an empty snapshot from each (Epoch 0).
//   - 401 means a missing or wrong token; 400 a body that is not a valid
//     Update, or an unsupported Version. Neither is retried as-is.
//
// Version 2 adds the engine's KV-cache groups (vLLM's hybrid models keep
// one per layer type: full attention, sliding window, Mamba): each Group
// names its KVGroup, and each Replica carries its Layout (every group's
// kind, window and block size). A receiver accepts versions 1 and 2; a
// version 1 body means one full-attention group. A sender that a version
// 1 router refuses (RefusedVersion) speaks version 1 to it, sending each
// replica's Primary group only, which is what such a router can index.
//
// Version 3 adds a replica's Approx: the reason its driver cannot key its
// blocks (an engine whose event schema lacks a field some keys depend on).
// Such a replica is sent holding nothing, and the router routes it approx
// with the reason. A sender refused by an older router steps down one
// version at a time; a version 2 router is not told the reason.
//
// Version 4 adds a replica's OffloadBlockSize: the block size of its
// engine's offloaded (CPU) tier, which vLLM's offloading connector loads in
// whole blocks only. A version 3 router is not told it and predicts a
// CPU-tier hit block by block.
//
// Structs encode as msgpack arrays; fields are only ever appended, and a
// change in meaning bumps Version. The package is a leaf: it imports nothing
// of llmgw's; block keys travel as the
// uint64 values of internal/blockkey's Key.
package kvwire
