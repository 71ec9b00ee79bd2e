package kvwire

// Version is the protocol version this package speaks. Version 2 adds the
// engine's KV-cache groups (Group.KVGroup, Replica.Layout), version 3 a
// replica's Approx reason, version 4 its OffloadBlockSize; a receiver
// accepts MinVersion to Version, and Encode writes an Update of an older
// Version in that version's shape (toV1, toV2, toV3), so drivers and
// routers of any of them work together.
const Version = 4

// MinVersion is the oldest version a receiver accepts.
const MinVersion = 1

// Path is the router endpoint that receives updates.
const Path = "/llmgw/kv/v1/updates"

// ContentType is the media type of an encoded Update.
const ContentType = "application/vnd.llmgw.kv+msgpack"

// Tier is the memory tier a block is cached in; a hit on a lower tier is
// worth less to the router.
type Tier uint8

// Tiers, from vLLM's BlockStored medium.
const (
	TierGPU Tier = 1
	TierCPU Tier = 2
)

func (t Tier) String() string {
	switch t {
	case TierGPU:
		return "gpu"
	case TierCPU:
		return "cpu"
	}
	return "unknown"
}

// Update is one message from a driver session to a router.
type Update struct {
	//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
	_msgpack struct{} `msgpack:",as_array"`

	Version  int       // protocol Version the sender speaks
	Driver   string    // stable identity of the sending driver (its node)
	Epoch    uint64    // random per session; never 0
	Seq      uint64    // +1 per update within an Epoch
	Snapshot bool      // Replicas is the complete state of this driver
	Replicas []Replica // replicas with changes (all replicas in a snapshot)
}

// Replica carries the blocks of one replica ("<alloc id>/<task>").
type Replica struct {
	//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
	_msgpack struct{} `msgpack:",as_array"`

	ID        string
	BlockSize int     // engine tokens per block; 0 while unknown
	Reset     bool    // drop all blocks held for ID before applying Groups
	Groups    []Group // per (rank, tier, KV group); a snapshot carries only Add
	// Layout lists the replica's KV-cache groups as its engine's events
	// declared them, by KVGroup index (version 2); nil while unknown, which
	// means one full-attention group. Sent with every entry of a replica
	// whose layout is known: it is a few bytes.
	Layout []KVGroupSpec
	// Approx, when set, says why the driver cannot key this replica's
	// blocks correctly (its engine's event schema lacks a field some keys
	// depend on, version 3). The driver then sends none of its blocks, and
	// the router routes it approx with this reason. Sent with every entry.
	Approx string
	// OffloadBlockSize is the block size, in tokens, of the replica's
	// offloaded (CPU) tier as its engine's events report it (vLLM's
	// offloading connector's offloaded_block_size); 0 while unknown. The
	// connector loads whole offloaded blocks only, so the router needs it
	// to predict a CPU-tier hit (version 4). Sent with every entry once
	// known.
	OffloadBlockSize int
}

// Group is the change to one (data-parallel rank, tier) of a replica.
type Group struct {
	//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
	_msgpack struct{} `msgpack:",as_array"`

	Rank int // vLLM data-parallel rank that holds the blocks
	Tier Tier
	Add  []uint64 // canonical block keys (internal/blockkey) now held
	Del  []uint64 // canonical block keys no longer held
	// KVGroup is the engine's KV-cache group (vLLM's group_idx) of the
	// blocks (version 2; always 0 in version 1).
	KVGroup int
}

// MaxKVGroups bounds a replica's KV-cache groups (vLLM models have a
// handful: one per layer type).
const MaxKVGroups = 64

// Kind is the attention type of a KV-cache group; it decides which of a
// prompt's blocks the group needs for a cache hit.
type Kind uint8

// Kinds, from vLLM's kv_cache_spec_kind. KindUnknown (a kind this version
// does not know) is treated as full attention, the strictest rule.
const (
	KindUnknown       Kind = 0
	KindFull          Kind = 1 // every block of the prefix
	KindSlidingWindow Kind = 2 // the blocks inside the window ending at the hit
	KindMamba         Kind = 3 // the state at exactly the hit position
)

func (k Kind) String() string {
	switch k {
	case KindFull:
		return "full"
	case KindSlidingWindow:
		return "sliding_window"
	case KindMamba:
		return "mamba"
	}
	return "unknown"
}

// KVGroupSpec describes one KV-cache group of a replica.
type KVGroupSpec struct {
	//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
	_msgpack struct{} `msgpack:",as_array"`

	Index     int  // the group's group_idx
	Kind      Kind // attention type
	Window    int  // sliding window in tokens (KindSlidingWindow), else 0
	BlockSize int  // engine tokens per block of this group; 0 while unknown
}
