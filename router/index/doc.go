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
// group are in flight together.
//
// # Representation
//
// A holder is one (replica, rank) and owns one slot: a bit in one of 64
// pages of 64 slots, so an Index serves at most MaxHolders (4,096) holders;
// the router keeps one Index per model, and the ingest refuses (and routes
// in approx mode) a replica beyond it. Each key's slot holds one page's
// two holder sets (GPU and CPU) inline; the holders of its other pages are
// an interned, immutable set that every key with the same other pages
// shares (a change to a key points it at another set: copy on write). A
// set of more than eight pages is also cut into interned chunks of eight
// pages, so two sets differing in a few pages share every other chunk's
// pointer. Slots are allocated lowest first, so a fleet of at most 64
// holders has page 0 only (every key's holders are its inline words), and
// a fleet that shrinks back below 64 holders returns to page 0 once the
// dead slots are swept.
//
// Replace fills fresh slots and swaps them in while slots are free, and
// replaces each rank in its own slot when none is (it never needs a second
// slot). Remove hides a replica at once and sweeps the map when removed
// holders' entries reach a sixteenth of the live ones.
//
// # Lookup
//
// Every query (Lookup, LookupStride, LookupReplicas) is answered by one
// walk (walk.go), whatever the fleet's size, so its rules live in one
// place: it follows the live holders of the prompt's first key (a replica
// none of whose ranks holds it has no match), retires each at the first
// key it lacks, counts the blocks a holder holds only on the CPU, stops
// once no holder it follows is left, and gives each replica its best
// rank's match (longest, then most GPU blocks, then lowest rank). With a
// stride it reads the first key, then probes every stride-th key and
// reads the keys between only where a holder drops out or moves from GPU
// to CPU memory. The walk reads a key's holders as its id, the inline
// word and the set's pointer: a key with the previous key's id costs a
// probe and a comparison (keys of one cached chain are mostly held by the
// same holders), and one whose id differs is read as its difference from
// the previous key, the chunks whose pointers differ. A prompt whose
// holders drop out one by one as it deepens thus costs O(holders +
// changes), not O(holders x changes), and a fleet of 64 holders reads one
// slot per key. The walk's per-holder scratch (4,096 slots) is pooled.
//
// LookupReplicas answers in the order of its candidate list. When the
// prompt's first key has many times more holders than the list is long
// (a prefix the whole fleet caches), it resolves the list's names first
// and the walk follows only their holders. In a sorted list shorter than
// the fleet, with few matches for its length (a narrowed list,
// router/replicas), it finds the matched replicas' names by galloping
// search; otherwise it remembers the replica groups of the lists it saw
// twice in a row (per slot table), so a router asking about the same
// replicas on every request compares its list instead of hashing every
// name.
//
// # Memory
//
// Options.MaxKeys bounds the number of keys. A store that would add a key
// beyond it is dropped and counted, the call returns ErrKeyCap, and
// Options.OnOverflow fires once per crossing; Stats reports sizes for
// metrics, Room whether a refused holder would fit again. Oversized checks each replica
// against the KV capacity its engines advertise, to catch an index that
// has missed removals.
package index
