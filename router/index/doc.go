// Package index is the router's precise prefix index: which replica (and
// data-parallel rank) holds which canonical block key, on which tier.
//
// It owns that map and nothing else: it knows no HTTP, no wire format and no
// tokenizer. Keys arrive as plain uint64 values (internal/blockkey's keys);
// the ingest endpoint translates driver updates into Update, Replace and
// Remove calls, and the scheduler's prefix scorer calls Lookup. It must not
// import driver/... or any other router package.
//
// # Concurrency
//
// One writer at a time (calls are serialised inside); any number of readers.
// The map is split into 256 shards, each behind its own RWMutex, and writers
// hold a shard for one key at a time (or one shard's sweep), so a Lookup
// never waits for an update to finish, only at most for one small critical
// section. Which holders are alive is an immutable table swapped atomically:
// Remove and Replace take effect for readers at once, before the stale bits
// are swept out.
//
// # Representation
//
// Each key maps to two 64-bit holder sets (GPU and CPU), one bit per holder
// slot; a holder is one (replica, rank). An Index therefore serves at most
// MaxHolders holders: the router keeps one Index per model.
//
// # Memory
//
// Options.MaxKeys bounds the number of keys. A store that would add a key
// beyond it is dropped and counted, and Options.OnOverflow fires once per
// crossing; Stats reports sizes for metrics.
package index
