package kvcache

// Kind names a KV event type; the values are vLLM's tag strings.
type Kind string

// The three event types vLLM publishes.
const (
	BlockStored      Kind = "BlockStored"
	BlockRemoved     Kind = "BlockRemoved"
	AllBlocksCleared Kind = "AllBlocksCleared"
)

// Media, as vLLM names them.
const (
	MediumGPU = "GPU"
	MediumCPU = "CPU"
)

// Event is one KV event in engine terms; the publisher encodes it.
type Event struct {
	Kind      Kind
	Hashes    []Hash
	Parent    *Hash    // BlockStored: the block before the first one; nil for a root
	Tokens    []uint32 // BlockStored on GPU: len(Hashes)*BlockSize tokens; empty on CPU
	BlockSize int
	LoRAName  string // "" sends None
	LoRAID    int    // the adapter's integer id, 0 for none (sends None)
	Medium    string
	// Extra is vLLM's extra_keys on a GPU BlockStored: one entry per block,
	// nil for a block without any (None on the wire).
	Extra [][]string
}
