package kvevents

import (
	"errors"
	"fmt"
	"math"

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

// Event is one decoded KV-cache event. Its slices point into the Decoder's
// buffers and stay valid only until the Decoder's next Decode.
type Event struct {
	Type      EventType
	Hashes    []uint64 // engine block hashes, normalised to uint64
	Parent    uint64   // engine hash of the block before Hashes[0]
	HasParent bool     // false when parent_block_hash is None
	Tokens    []uint32 // len(Hashes)*BlockSize ids; empty for CPU offload stores
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
}

// Batch is one decoded payload frame (vLLM's KVEventBatch).
type Batch struct {
	TS      float64
	Events  []Event
	Rank    int  // data_parallel_rank
	HasRank bool // false in the 2-element v0.9 schema or when None
}

// DecodeStats counts what the decoder accepted and skipped.
type DecodeStats struct {
	Batches       uint64 // payloads decoded
	BadBatches    uint64 // payloads that were not a valid batch, skipped whole
	Events        uint64 // events delivered
	BadEvents     uint64 // events that broke their schema's rules, skipped
	UnknownEvents uint64 // events with an unknown type tag, skipped
	UnknownFields uint64 // fields outside the known schemas, ignored
}

// ErrMalformed wraps every error Decode returns for a bad payload.
var ErrMalformed = errors.New("malformed KV event batch")

// Limits that keep a hostile payload from making the decoder allocate
// without bound; vLLM's real values are far below them.
const (
	maxBlockSize = 1 << 16
	maxLoRAName  = 1 << 10
)

// Decoder decodes vLLM KV-event payloads of every schema vLLM has shipped:
// the batch as an array of 2 or 3 elements or as a map; events as tagged
// arrays of any length (missing trailing fields are None, extra ones are
// ignored) or as maps keyed by field name with "type"; any msgpack integer
// width; block hashes as uint64, negative int64 or bytes. It reuses its
// buffers, so it is not safe for concurrent use: use one per listener.
type Decoder struct {
	batch  Batch
	hashes []uint64
	tokens []uint32
	extras []blockkey.Extra
	xbytes []byte
	lora   []byte // last LoRA name seen, to avoid an allocation per event
	loraS  string
	Stats  DecodeStats
}

// Decode decodes one payload. The returned batch and its events are valid
// until the next call. A payload that is not a valid batch returns an error
// wrapping ErrMalformed and counts as a bad batch; a single bad or unknown
// event is skipped and counted, and the rest of the batch is kept.
func (d *Decoder) Decode(payload []byte) (*Batch, error) {
	d.batch = Batch{Events: d.batch.Events[:0]}
	d.hashes, d.tokens, d.extras, d.xbytes = d.hashes[:0], d.tokens[:0], d.extras[:0], d.xbytes[:0]
	r := reader{b: payload}
	if err := d.decodeBatch(&r); err != nil {
		d.Stats.BadBatches++
		d.batch.Events = d.batch.Events[:0]
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if r.remaining() != 0 {
		d.Stats.BadBatches++
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, r.remaining())
	}
	d.Stats.Batches++
	d.Stats.Events += uint64(len(d.batch.Events))
	return &d.batch, nil
}

func (d *Decoder) decodeBatch(r *reader) error {
	c, err := r.peek()
	if err != nil {
		return err
	}
	if isMap(c) {
		return d.decodeBatchMap(r)
	}
	n, err := r.arrayLen()
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	if n < 2 {
		return fmt.Errorf("batch: array of %d elements; want at least 2 (ts, events)", n)
	}
	if d.batch.TS, err = r.float(); err != nil {
		return fmt.Errorf("batch ts: %w", err)
	}
	if err := d.decodeEvents(r); err != nil {
		return err
	}
	if n >= 3 {
		if err := d.decodeRank(r); err != nil {
			return err
		}
	}
	for i := 3; i < n; i++ {
		d.Stats.UnknownFields++
		if err := r.skip(); err != nil {
			return fmt.Errorf("batch field %d: %w", i, err)
		}
	}
	return nil
}

func (d *Decoder) decodeBatchMap(r *reader) error {
	n, err := r.mapLen()
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	seenEvents := false
	for range n {
		k, err := r.strBytes()
		if err != nil {
			return fmt.Errorf("batch key: %w", err)
		}
		switch string(k) {
		case "ts":
			if d.batch.TS, err = r.float(); err != nil {
				return fmt.Errorf("batch ts: %w", err)
			}
		case "events":
			if err := d.decodeEvents(r); err != nil {
				return err
			}
			seenEvents = true
		case "data_parallel_rank":
			if err := d.decodeRank(r); err != nil {
				return err
			}
		default:
			d.Stats.UnknownFields++
			if err := r.skip(); err != nil {
				return fmt.Errorf("batch field %q: %w", k, err)
			}
		}
	}
	if !seenEvents {
		return errors.New("batch map has no events")
	}
	return nil
}

func (d *Decoder) decodeRank(r *reader) error {
	if r.nextIsNil() {
		return nil
	}
	v, err := r.intIn("data_parallel_rank", 0, math.MaxUint16)
	if err != nil {
		return err
	}
	d.batch.Rank, d.batch.HasRank = int(v), true
	return nil
}

func (d *Decoder) decodeEvents(r *reader) error {
	n, err := r.arrayLen()
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	for i := range n {
		if err := d.decodeEvent(r); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	return nil
}
