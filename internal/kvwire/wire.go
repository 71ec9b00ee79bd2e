package kvwire

// Version is the protocol version this package speaks.
const Version = 1

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
	Groups    []Group // per (rank, tier); a snapshot carries only Add
}

// Group is the change to one (data-parallel rank, tier) of a replica.
type Group struct {
	//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
	_msgpack struct{} `msgpack:",as_array"`

	Rank int // vLLM data-parallel rank that holds the blocks
	Tier Tier
	Add  []uint64 // canonical block keys (internal/blockkey) now held
	Del  []uint64 // canonical block keys no longer held
}
