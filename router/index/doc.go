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
// hashing every name; for a list it does not remember, whose first key
// has many times more holders than the list is long (a prefix the whole
// fleet caches), it resolves the list's names first and walks only their
// holders.
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
// fleet of at most 64 holders has page 0 only, and its Lookup is the
// one-word walk over the inline sets. A larger one takes the paged walk,
// whose work follows the prompt's holders: it reads a key's pages only
// when its set or inline word differs from the previous key's (keys of
// one cached chain are mostly held by the same holders), and then only
// the difference: a set of more than eight pages is also cut into
// interned chunks of eight pages, so two sets differing in a few pages
// share every other chunk's pointer, and a step from one to the other
// reads the chunks that differ. A prompt whose holders drop out one by
// one as it deepens thus costs O(holders + changes), not O(holders x
// changes). Slots are allocated lowest
// first, so a fleet that shrinks back below 64 holders returns to page 0
// once the dead slots are swept.
//
// Two walks, one definition. What a lookup answers is defined once, by
// the reference model in model_test.go (a map from key to holders, walked
// key by key): a replica's match is its best rank's (longest run of
// leading keys held on any tier, then most on the GPU), a replica none of
// whose ranks holds the first key has none, and the walk stops at the
// first key no holder it follows has. Both walks are checked against
// that model on random histories (TestIndexMatchesModel,
// TestPagedIndexMatchesModel) and across the 64-holder boundary in both
// directions (TestWalkAcrossPageBoundary, strides 1 to 1000). They stay
// two because one walk for every size was measured and costs the whole
// routing decision about 5% at 64 replicas (BenchmarkRouteDecision p50,
// 11.4 to 12.0 µs, interleaved runs on 2026-12-04; the id it carries
// from key to key is four words, not the one-word walk's two):
// docs/notes/2026-12-04-one-walk.md.
//
// Replace fills fresh slots and swaps them in while slots are free, and
// replaces each rank in its own slot when none is (it never needs a second
// slot). Remove hides a replica at once, and so does Replace its old
// slots; both leave the map to be swept when removed holders' entries
// reach a sixteenth of the live ones. A fleet applying every replica's
// snapshot thus pays a few sweeps of the map, not one per replica, and
// the rest of a Replace costs the replica's keys and ranks: the slot
// table's holder names are pages shared between tables, and its replica
// names are split into parts, so that publishing a table copies only what
// changed (BenchmarkReplaceFleet, docs/notes/2026-12-05-scale-snapshots.md).
// The in-place path, taken when all MaxHolders slots are live, finds a
// replica's stale keys among the keys its slot may hold, lists the index
// keeps only while it is full (inplace.go), so a resync of a full index
// is O(entries) too, not a pass over the map per replica.
//
// # Memory
//
// While every slot is live the index also keeps those per-slot key lists:
// 8 bytes per (key, holder) entry, at most about twice that before a list
// is compacted; they go once sweeps free a sixteenth of the slots.
//
// Options.MaxKeys bounds the number of keys. A store that would add a key
// beyond it is dropped and counted, the call returns ErrKeyCap, and
// Options.OnOverflow fires once per crossing; Stats reports sizes for
// metrics, Room whether a refused holder would fit again. Oversized checks each replica
// against the KV capacity its engines advertise, to catch an index that
// has missed removals.
package index
