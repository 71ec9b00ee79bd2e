package intake

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/internal/kvwire"
)

// eventFields collects an event's fields in either form before the event is
// judged; bad records why it is to be skipped.
type eventFields struct {
	ev      kvevents.Event
	tag     []byte
	hasTag  bool
	bad     error
	extraAt int // payload offset of a non-nil extra_keys value, -1 when none
	// What schemaGaps needs: the array form's field count (-1 in the map
	// form), whether lora_id was non-nil and whether lora_name was sent.
	fields   int
	loraID   bool
	loraName bool
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
	f := eventFields{extraAt: -1, fields: -1}
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
		f.bad = check(&f.ev)
	}
	if f.bad == nil {
		f.ev.Gaps = schemaGaps(&f)
	}
	if f.bad != nil {
		switch {
		case errors.Is(f.bad, errUnknownTag):
			d.Stats.UnknownEvents++
		case isOffloadPlaceholder(&f.ev):
			d.Stats.OffloadPlaceholders++
		default:
			d.Stats.BadEvents++
		}
		d.hashes, d.tokens, d.extras, d.xbytes = d.hashes[:mark[0]], d.tokens[:mark[1]], d.extras[:mark[2]], d.xbytes[:mark[3]]
		return nil
	}
	d.batch.Events = append(d.batch.Events, f.ev)
	return nil
}

var errUnknownTag = errors.New("unknown event type")

// isOffloadPlaceholder reports whether ev is a store vLLM's
// OffloadingConnector sends for an offloaded tier without describing it
// (block_size 0, no token ids): see DecodeStats.OffloadPlaceholders.
func isOffloadPlaceholder(ev *kvevents.Event) bool {
	return ev.Type == kvevents.BlockStored && ev.BlockSize == 0 && len(ev.Tokens) == 0 && ev.Medium != kvevents.MediumGPU
}

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
	case kvevents.BlockStored:
		names, f.fields = storedFieldNames, n-1
	case kvevents.BlockRemoved:
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
		f.ev.Type = kvevents.BlockStored
	case "BlockRemoved":
		f.ev.Type = kvevents.BlockRemoved
	case "AllBlocksCleared":
		f.ev.Type = kvevents.AllBlocksCleared
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
		return d.tokenIDs(r, ev)
	case "block_size":
		v, err := r.intIn("block_size", 0, maxBlockSize) // 0: an offload placeholder, or bad (check)
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
			ev.Medium = kvevents.MediumGPU
		case bytes.EqualFold(m, []byte("CPU")):
			ev.Medium = kvevents.MediumCPU
		default:
			ev.Medium = kvevents.MediumOther
		}
	case "lora_name":
		f.loraName = true
		return d.loraName(r, ev)
	case "extra_keys":
		if r.nextIsNil() {
			return nil
		}
		f.extraAt = r.off
		return r.skip()
	case "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window":
		return groupField(r, ev, name)
	case "lora_id":
		// Not needed for keys (lora_name is), only to see that an adapter
		// block came without its name (schemaGaps).
		if r.nextIsNil() {
			return nil
		}
		f.loraID = true
		return r.skip()
	default:
		d.Stats.UnknownFields++
		return r.skip()
	}
	return nil
}

// extraKeysField is where extra_keys sits in BlockStored's array form
// (after the tag): an array of no more fields comes from a vLLM without it.
var extraKeysField = slices.Index(storedFieldNames, "extra_keys")

// schemaGaps says which key-deciding fields a good event's schema lacks.
// Only the array form can lack them: the map form came with a vLLM that has
// every field, and leaves out only None-defaulted ones (extra_keys of a
// plain block), which are absent, not unknown.
func schemaGaps(f *eventFields) kvevents.Gap {
	if f.ev.Type != kvevents.BlockStored {
		return 0
	}
	var g kvevents.Gap
	if f.fields >= 0 && f.fields <= extraKeysField {
		g |= kvevents.GapExtraKeys
	}
	if f.loraID && !f.loraName {
		g |= kvevents.GapLoRAName
	}
	return g
}

// tokenIDs decodes token_ids into ev, with a fast path for the widths
// msgspec uses for token ids.
func (d *Decoder) tokenIDs(r *reader, ev *kvevents.Event) error {
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
	return nil
}

// groupField decodes a hybrid model's KV-cache group fields into ev.
func groupField(r *reader, ev *kvevents.Event, name string) error {
	switch name {
	case "group_idx":
		if r.nextIsNil() {
			return nil
		}
		v, err := r.intIn("group_idx", 0, kvwire.MaxKVGroups-1)
		if err != nil {
			return err
		}
		ev.GroupIdx = int(v)
	case "kv_cache_spec_kind":
		if r.nextIsNil() {
			return nil
		}
		s, err := r.strBytes()
		if err != nil {
			return err
		}
		ev.Kind, ev.HasKind = kindOf(s), true
	case "kv_cache_spec_sliding_window":
		if r.nextIsNil() {
			return nil
		}
		v, err := r.intIn("kv_cache_spec_sliding_window", 1, maxWindow)
		if err != nil {
			return err
		}
		ev.Window = int(v)
	}
	return nil
}

// loraName decodes lora_name into ev, reusing the previous event's string
// when the name repeats.
func (d *Decoder) loraName(r *reader, ev *kvevents.Event) error {
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
	return nil
}
