// Package index is the router's precise prefix index: which replica (and
// data-parallel rank) holds which canonical block key, on which tier.
//
// It owns that map and nothing else: it knows no HTTP, no wire format and no
// tokenizer. Keys arrive as plain uint64 values (internal/blockkey's keys);
// the ingest endpoint translates driver updates into Update, Replace and
// Remove calls, and the scheduler's prefix scorer calls LookupReplicas
// (Lookup's walk, answered in the order of its candidates). It must not
// import driver/... or any other router package.
//
// # Concurrency
//
// One writer at a time (calls are serialised inside); any number of readers,
// which take no lock. The keys are split into 256 shards, each an
// open-addressing table guarded by a sequence counter (a seqlock): the writer
// makes it odd while it changes one key of the shard (or sweeps the shard)
// and even again after; a reader probes without locking and repeats the
// probe if the counter moved. A Lookup thus never waits for an update to
// finish and never slows the writer. Which holders are alive is an
// immutable slot table swapped atomically: Remove and Replace take effect
// for readers at once, before the stale bits are swept out, and a slot is
// reused only after every Lookup that could still see its old owner has
// finished. The writer loads the slots of a batch's keys a group at a time
// before changing them, because each change's locked instructions would
// otherwise wait out the cache misses one by one; a Lookup likewise touches
// its keys a group ahead of the ones it reads, so that the misses of a
// group are in flight together. LookupReplicas remembers the replica groups
// of the candidate lists it saw last (per slot table), so a router asking
// about the same replicas on every request compares its list instead of
// hashing every name.
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
// crossing; Stats reports sizes for metrics. Oversized checks each replica
// against the KV capacity its engines advertise, to catch an index that
// has missed removals.
package index
