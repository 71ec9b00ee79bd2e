package intake

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/internal/blockkey"
)

// libDecoder decodes the batches BenchmarkDecode sends with
// vmihailenco/msgpack's streaming Decoder (its fastest API: no
// reflection, one Decoder reused over a reused bytes.Reader, tags read
// into a scratch buffer) into the same Batch and the same reused buffers
// as Decoder. It is the library's best case: it knows only the array
// schema of these batches and checks no field's range, where Decoder
// handles every vLLM schema and bounds every length.
type libDecoder struct {
	dec    *msgpack.Decoder
	br     bytes.Reader
	batch  kvevents.Batch
	hashes []uint64
	tokens []uint32
	extras []blockkey.Extra
	tag    []byte
}

func newLibDecoder() *libDecoder { return &libDecoder{dec: msgpack.NewDecoder(nil)} }

func (d *libDecoder) Decode(payload []byte) (*kvevents.Batch, error) {
	d.batch = kvevents.Batch{Events: d.batch.Events[:0]}
	d.hashes, d.tokens, d.extras = d.hashes[:0], d.tokens[:0], d.extras[:0]
	d.br.Reset(payload)
	d.dec.Reset(&d.br)
	n, err := d.dec.DecodeArrayLen()
	if err != nil || n < 2 {
		return nil, fmt.Errorf("batch: %d elements, %v", n, err)
	}
	if d.batch.TS, err = d.dec.DecodeFloat64(); err != nil {
		return nil, err
	}
	events, err := d.dec.DecodeArrayLen()
	if err != nil {
		return nil, err
	}
	for range events {
		if err := d.event(); err != nil {
			return nil, err
		}
	}
	if n > 2 {
		if rank, err := d.dec.DecodeInt(); err == nil {
			d.batch.Rank, d.batch.HasRank = rank, true
		}
	}
	return &d.batch, nil
}

func (d *libDecoder) event() error {
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	tag, err := d.str()
	if err != nil {
		return err
	}
	var ev kvevents.Event
	names := removedFieldNames
	switch string(tag) {
	case "BlockStored":
		ev.Type, names = kvevents.BlockStored, storedFieldNames
	case "BlockRemoved":
		ev.Type = kvevents.BlockRemoved
	default:
		return fmt.Errorf("tag %q", tag)
	}
	for i := 1; i < n; i++ {
		if err := d.field(&ev, names[i-1]); err != nil {
			return err
		}
	}
	d.batch.Events = append(d.batch.Events, ev)
	return nil
}

// str reads a string or nil (as empty) into the scratch buffer.
func (d *libDecoder) str() ([]byte, error) {
	n, err := d.dec.DecodeBytesLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if cap(d.tag) < n {
		d.tag = make([]byte, n)
	}
	d.tag = d.tag[:n]
	return d.tag, d.dec.ReadFull(d.tag)
}

func (d *libDecoder) isNil() bool {
	c, err := d.dec.PeekCode()
	return err == nil && c == 0xc0
}

func (d *libDecoder) field(ev *kvevents.Event, name string) error {
	switch name {
	case "block_hashes":
		n, err := d.dec.DecodeArrayLen()
		if err != nil {
			return err
		}
		base := len(d.hashes)
		for range n {
			h, err := d.dec.DecodeUint64()
			if err != nil {
				return err
			}
			d.hashes = append(d.hashes, h)
		}
		ev.Hashes = d.hashes[base:len(d.hashes):len(d.hashes)]
	case "parent_block_hash":
		if d.isNil() {
			return d.dec.Skip()
		}
		h, err := d.dec.DecodeUint64()
		ev.Parent, ev.HasParent = h, true
		return err
	case "token_ids":
		n, err := d.dec.DecodeArrayLen()
		if err != nil {
			return err
		}
		base := len(d.tokens)
		for range n {
			t, err := d.dec.DecodeUint32()
			if err != nil {
				return err
			}
			d.tokens = append(d.tokens, t)
		}
		ev.Tokens = d.tokens[base:len(d.tokens):len(d.tokens)]
	case "block_size":
		bs, err := d.dec.DecodeInt()
		ev.BlockSize = bs
		return err
	case "medium":
		m, err := d.str()
		if err != nil {
			return err
		}
		switch {
		case len(m) == 0, bytes.EqualFold(m, []byte("GPU")):
			ev.Medium = kvevents.MediumGPU
		case bytes.EqualFold(m, []byte("CPU")):
			ev.Medium = kvevents.MediumCPU
		default:
			ev.Medium = kvevents.MediumOther
		}
	case "group_idx":
		g, err := d.dec.DecodeInt()
		ev.GroupIdx = g
		return err
	case "kv_cache_spec_kind":
		if d.isNil() {
			return d.dec.Skip()
		}
		k, err := d.str()
		if err != nil {
			return err
		}
		ev.Kind, ev.HasKind = kindOf(k), true
	case "extra_keys":
		// Nil, or one nil per block in these batches: nothing to encode.
		if d.isNil() {
			return d.dec.Skip()
		}
		n, err := d.dec.DecodeArrayLen()
		if err != nil {
			return err
		}
		base := len(d.extras)
		for range n {
			if !d.isNil() {
				return errors.New("extra_keys entry: only nil is handled here")
			}
			if err := d.dec.Skip(); err != nil {
				return err
			}
			d.extras = append(d.extras, nil)
		}
		ev.Extra = d.extras[base:len(d.extras):len(d.extras)]
	default:
		return d.dec.Skip()
	}
	return nil
}

// TestLibDecoderAgrees: the library's decoder, as the benchmark uses it,
// yields the same batches as Decoder, so the two are timed on equal work.
func TestLibDecoderAgrees(t *testing.T) {
	payloads := churnPayloads(t, 8, 4)
	var hand Decoder
	lib := newLibDecoder()
	for i, p := range payloads {
		want, err := hand.Decode(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := lib.Decode(p)
		if err != nil {
			t.Fatalf("payload %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("payload %d: library decoder %+v; Decoder %+v", i, got, want)
		}
	}
}

// BenchmarkMsgpack compares Decoder's msgpack reader with
// vmihailenco/msgpack/v5 on BenchmarkDecode's batches (steady churn, 16
// block events a batch, 12-field schema): "hand" is Decoder, "lib-stream"
// the library's streaming Decoder into the same structures (libDecoder),
// and "lib-any" the library's generic decode into []any, the shape the
// tagged-union events would take without a hand-written walk.
func BenchmarkMsgpack(b *testing.B) {
	payloads := churnPayloads(b, 256, 64)
	b.Run("hand", func(b *testing.B) {
		var d Decoder
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := d.Decode(payloads[i%len(payloads)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib-stream", func(b *testing.B) {
		d := newLibDecoder()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := d.Decode(payloads[i%len(payloads)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib-any", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			var v []any
			if err := msgpack.Unmarshal(payloads[i%len(payloads)], &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
