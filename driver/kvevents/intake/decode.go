package intake

import (
	"errors"
	"fmt"
	"math"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/internal/blockkey"
)

// DecodeStats counts what the decoder accepted and skipped.
type DecodeStats struct {
	Batches       uint64 // payloads decoded
	BadBatches    uint64 // payloads that were not a valid batch, skipped whole
	Events        uint64 // events delivered
	BadEvents     uint64 // events that broke their schema's rules, skipped
	UnknownEvents uint64 // events with an unknown type tag, skipped
	UnknownFields uint64 // fields outside the known schemas, ignored
	// OffloadPlaceholders counts BlockStored events of an offloaded tier
	// with block_size 0 and no tokens, skipped: vLLM's OffloadingConnector
	// sends them for CPU stores unless its kv_connector_extra_config sets
	// self_describing_kv_events, and they name no block a prompt could
	// be keyed to. The replica's CPU tier is then missing from the index.
	OffloadPlaceholders uint64
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
	batch  kvevents.Batch
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
func (d *Decoder) Decode(payload []byte) (*kvevents.Batch, error) {
	d.batch = kvevents.Batch{Events: d.batch.Events[:0]}
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
