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
	// Group is the KV-cache group (group_idx); SpecKind and Window are its
	// kv_cache_spec_kind and kv_cache_spec_sliding_window (0: None), sent
	// on BlockStored only. A hybrid group's BlockStored names the hashes of
	// the blocks it keeps, while Tokens span every block it completed, as
	// vLLM's cache_full_blocks skips null blocks.
	Group    int
	SpecKind SpecKind
	Window   int
}

// groupEvent stamps ev with group g's identity.
func (p *Pool) groupEvent(ev Event, g int) Event {
	ev.Group = g
	if ev.Kind == BlockStored {
		ev.SpecKind, ev.Window = p.groups[g].Kind, p.groups[g].Window
	}
	return ev
}
