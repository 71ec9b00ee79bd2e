package kvevents

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/llmgw/llmgw/internal/blockkey"
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

// eventFields collects an event's fields in either form before the event is
// judged; bad records why it is to be skipped.
type eventFields struct {
	ev      Event
	tag     []byte
	hasTag  bool
	bad     error
	extraAt int // payload offset of a non-nil extra_keys value, -1 when none
}

// Positional fields of BlockStored after the tag, as the reference lists.
var storedFieldNames = []string{
	"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id",
	"medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind",
	"kv_cache_spec_sliding_window",
}

// Positional fields of BlockRemoved after the tag.
var removedFieldNames = []string{"block_hashes", "medium", "group_idx"}

func (d *Decoder) decodeEvent(r *reader) error {
	mark := [4]int{len(d.hashes), len(d.tokens), len(d.extras), len(d.xbytes)}
	f := eventFields{extraAt: -1}
	c, err := r.peek()
	if err != nil {
		return err
	}
	if isMap(c) {
		err = d.decodeEventMap(r, &f)
	} else {
		err = d.decodeEventArray(r, &f)
	}
	if err != nil {
		return err
	}
	if f.bad == nil && f.extraAt >= 0 {
		f.bad = d.extraKeys(&reader{b: r.b, off: f.extraAt}, &f.ev)
	}
	if f.bad == nil {
		f.bad = f.ev.check()
	}
	if f.bad != nil {
		if errors.Is(f.bad, errUnknownTag) {
			d.Stats.UnknownEvents++
		} else {
			d.Stats.BadEvents++
		}
		d.hashes, d.tokens, d.extras, d.xbytes = d.hashes[:mark[0]], d.tokens[:mark[1]], d.extras[:mark[2]], d.xbytes[:mark[3]]
		return nil
	}
	d.batch.Events = append(d.batch.Events, f.ev)
	return nil
}

var errUnknownTag = errors.New("unknown event type")

func (d *Decoder) decodeEventArray(r *reader, f *eventFields) error {
	n, err := r.arrayLen()
	if err != nil {
		return err
	}
	if n == 0 {
		f.bad = errors.New("empty event array")
		return nil
	}
	if err := d.readTag(r, f); err != nil {
		return err
	}
	if f.bad != nil { // unknown tag: step over the rest unread
		for i := 1; i < n; i++ {
			if err := r.skip(); err != nil {
				return err
			}
		}
		return nil
	}
	var names []string
	switch f.ev.Type {
	case BlockStored:
		names = storedFieldNames
	case BlockRemoved:
		names = removedFieldNames
	}
	for i := 1; i < n; i++ {
		name := ""
		if i-1 < len(names) {
			name = names[i-1]
		}
		if err := d.field(r, f, name); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) decodeEventMap(r *reader, f *eventFields) error {
	n, err := r.mapLen()
	if err != nil {
		return err
	}
	for range n {
		k, err := r.strBytes()
		if err != nil {
			return fmt.Errorf("event key: %w", err)
		}
		if string(k) == "type" {
			if err := d.readTag(r, f); err != nil {
				return err
			}
			continue
		}
		if err := d.field(r, f, string(k)); err != nil {
			return err
		}
	}
	if !f.hasTag && f.bad == nil {
		f.bad = errors.New(`event map has no "type"`)
	}
	return nil
}

func (d *Decoder) readTag(r *reader, f *eventFields) error {
	start := r.off
	tag, err := r.strBytes()
	if err != nil {
		r.off = start
		if err := r.skip(); err != nil {
			return err
		}
		f.bad = errors.New("event tag is not a string")
		return nil
	}
	f.tag, f.hasTag = tag, true
	switch string(tag) {
	case "BlockStored":
		f.ev.Type = BlockStored
	case "BlockRemoved":
		f.ev.Type = BlockRemoved
	case "AllBlocksCleared":
		f.ev.Type = AllBlocksCleared
	default:
		f.bad = fmt.Errorf("%w %q", errUnknownTag, tag)
	}
	return nil
}

// field decodes one named field into f. A value of the wrong shape marks the
// event bad and is stepped over; only a value that cannot be stepped over
// (broken msgpack) fails the batch.
func (d *Decoder) field(r *reader, f *eventFields, name string) error {
	start := r.off
	err := d.fieldValue(r, f, name)
	if err == nil {
		return nil
	}
	r.off = start
	if serr := r.skip(); serr != nil {
		return fmt.Errorf("field %s: %w", name, serr)
	}
	if f.bad == nil {
		f.bad = fmt.Errorf("field %s: %w", name, err)
	}
	return nil
}

func (d *Decoder) fieldValue(r *reader, f *eventFields, name string) error {
	ev := &f.ev
	switch name {
	case "block_hashes":
		n, err := r.arrayLen()
		if err != nil {
			return err
		}
		base := len(d.hashes)
		for range n {
			h, err := r.hash()
			if err != nil {
				return err
			}
			d.hashes = append(d.hashes, h)
		}
		ev.Hashes = d.hashes[base:len(d.hashes):len(d.hashes)]
	case "parent_block_hash":
		if r.nextIsNil() {
			return nil
		}
		h, err := r.hash()
		if err != nil {
			return err
		}
		ev.Parent, ev.HasParent = h, true
	case "token_ids":
		n, err := r.arrayLen()
		if err != nil {
			return err
		}
		base := len(d.tokens)
		d.tokens = slices.Grow(d.tokens, n)
		for range n {
			// Fast path for the widths msgspec uses for token ids.
			if p := r.b[r.off:]; len(p) >= 5 {
				switch c := p[0]; {
				case c <= 0x7f:
					d.tokens = append(d.tokens, uint32(c))
					r.off++
					continue
				case c == 0xcc:
					d.tokens = append(d.tokens, uint32(p[1]))
					r.off += 2
					continue
				case c == 0xcd:
					d.tokens = append(d.tokens, uint32(p[1])<<8|uint32(p[2]))
					r.off += 3
					continue
				case c == 0xce:
					d.tokens = append(d.tokens, uint32(p[1])<<24|uint32(p[2])<<16|uint32(p[3])<<8|uint32(p[4]))
					r.off += 5
					continue
				}
			}
			v, err := r.intIn("token id", 0, math.MaxUint32)
			if err != nil {
				return err
			}
			d.tokens = append(d.tokens, uint32(v))
		}
		ev.Tokens = d.tokens[base:len(d.tokens):len(d.tokens)]
	case "block_size":
		v, err := r.intIn("block_size", 1, maxBlockSize)
		if err != nil {
			return err
		}
		ev.BlockSize = int(v)
	case "medium":
		if r.nextIsNil() {
			return nil
		}
		m, err := r.strBytes()
		if err != nil {
			return err
		}
		switch {
		case bytes.EqualFold(m, []byte("GPU")):
			ev.Medium = MediumGPU
		case bytes.EqualFold(m, []byte("CPU")):
			ev.Medium = MediumCPU
		default:
			ev.Medium = MediumOther
		}
	case "lora_name":
		if r.nextIsNil() {
			return nil
		}
		s, err := r.strBytes()
		if err != nil {
			return err
		}
		if len(s) > maxLoRAName {
			return fmt.Errorf("lora_name of %d bytes", len(s))
		}
		if !bytes.Equal(s, d.lora) || d.loraS == "" {
			d.lora = append(d.lora[:0], s...)
			d.loraS = string(s)
		}
		ev.LoRAName = d.loraS
	case "extra_keys":
		if r.nextIsNil() {
			return nil
		}
		f.extraAt = r.off
		return r.skip()
	case "group_idx":
		if r.nextIsNil() {
			return nil
		}
		v, err := r.intIn("group_idx", 0, math.MaxInt32)
		if err != nil {
			return err
		}
		ev.GroupIdx = int(v)
	case "lora_id", "kv_cache_spec_kind", "kv_cache_spec_sliding_window":
		return r.skip() // known, not needed for keys or routing
	default:
		d.Stats.UnknownFields++
		return r.skip()
	}
	return nil
}
