package kvevents

import (
	"fmt"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
)

// EventType is the kind of a vLLM KV-cache event.
type EventType uint8

// The event kinds vLLM publishes (the msgspec tag is the class name).
const (
	BlockStored EventType = iota + 1
	BlockRemoved
	AllBlocksCleared
)

func (t EventType) String() string {
	switch t {
	case BlockStored:
		return "BlockStored"
	case BlockRemoved:
		return "BlockRemoved"
	case AllBlocksCleared:
		return "AllBlocksCleared"
	}
	return fmt.Sprintf("EventType(%d)", t)
}

// Medium is where a block lives, from the event's medium field.
type Medium uint8

// Media. A missing or nil medium (schemas before vLLM's medium field) is GPU.
const (
	MediumGPU Medium = iota
	MediumCPU
	MediumOther // a medium this driver does not index (e.g. disk storage)
)

// Event is one decoded KV-cache event (intake.Decoder makes them). Its
// slices point into the decoder's buffers and stay valid only until its
// next Decode; Store.Apply copies what it keeps.
type Event struct {
	Type      EventType
	Hashes    []uint64 // engine block hashes, normalised to uint64
	Parent    uint64   // engine hash of the block before Hashes[0]
	HasParent bool     // false when parent_block_hash is None
	Tokens    []uint32 // whole blocks, at least len(Hashes); more where the group skipped null blocks (they lead); empty for CPU offload stores
	BlockSize int
	Medium    Medium
	LoRAName  string
	// Extra holds each block's cache-affecting extra keys in blockkey's
	// encoding, with the LoRA name (already in LoRAName) left out. It is nil
	// when the event has no extra_keys, and an entry is nil for a plain block.
	Extra    []blockkey.Extra
	GroupIdx int
	// Kind and Window are the group's kv_cache_spec_kind and
	// kv_cache_spec_sliding_window (BlockStored of a vLLM that sends them;
	// HasKind false otherwise).
	Kind    kvwire.Kind
	Window  int
	HasKind bool
	// Gaps are the key-deciding fields the event's schema lacks (BlockStored
	// only); a replica that sends one is untrusted (Store.Untrusted).
	Gaps Gap
}

// Batch is one decoded payload frame (vLLM's KVEventBatch).
type Batch struct {
	TS      float64
	Events  []Event
	Rank    int  // data_parallel_rank
	HasRank bool // false in the 2-element v0.9 schema or when None
}
