package intake

import (
	"errors"
	"fmt"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/internal/blockkey"
)

// extraKeys decodes vLLM's per-block extra_keys list into blockkey's
// canonical encoding. vLLM puts the LoRA name first in each block's tuple;
// it is already mixed into the chain's root, so it is left out here, and so
// the router, which knows the LoRA name and cache_salt of a request, can
// build the same bytes.
func (d *Decoder) extraKeys(r *reader, ev *kvevents.Event) error {
	n, err := r.arrayLen()
	if err != nil {
		return fmt.Errorf("extra_keys: %w", err)
	}
	base := len(d.extras)
	for range n {
		if r.nextIsNil() {
			d.extras = append(d.extras, nil)
			continue
		}
		items, err := r.arrayLen()
		if err != nil {
			return fmt.Errorf("extra_keys entry: %w", err)
		}
		start := len(d.xbytes)
		for j := range items {
			if j == 0 && ev.LoRAName != "" {
				save := r.off
				if s, err := r.strBytes(); err == nil && string(s) == ev.LoRAName {
					continue
				}
				r.off = save
			}
			if d.xbytes, err = appendItem(d.xbytes, r, 0); err != nil {
				return fmt.Errorf("extra_keys item: %w", err)
			}
		}
		if len(d.xbytes) == start {
			d.extras = append(d.extras, nil)
			continue
		}
		d.extras = append(d.extras, blockkey.Extra(d.xbytes[start:len(d.xbytes):len(d.xbytes)]))
	}
	ev.Extra = d.extras[base:len(d.extras):len(d.extras)]
	return nil
}

// appendItem encodes one msgpack value of an extra-keys tuple.
func appendItem(x blockkey.Extra, r *reader, depth int) (blockkey.Extra, error) {
	if depth > maxDepth {
		return x, fmt.Errorf("nesting deeper than %d", maxDepth)
	}
	c, err := r.peek()
	if err != nil {
		return x, err
	}
	switch {
	case c == 0xc0:
		r.off++
		return x.AppendNil(), nil
	case c == 0xc2 || c == 0xc3:
		r.off++
		return x.AppendInt(int64(c - 0xc2)), nil
	case c&0xe0 == 0xa0 || (c >= 0xd9 && c <= 0xdb):
		s, err := r.strBytes()
		return x.AppendString(string(s)), err
	case c >= 0xc4 && c <= 0xc6:
		b, err := r.strBytes()
		return x.AppendBytes(b), err
	case c == 0xca || c == 0xcb:
		v, err := r.float()
		return x.AppendFloat(v), err
	case isArray(c):
		n, err := r.arrayLen()
		if err != nil {
			return x, err
		}
		x = x.AppendList(n)
		for range n {
			if x, err = appendItem(x, r, depth+1); err != nil {
				return x, err
			}
		}
		return x, nil
	case isMap(c):
		return x, errors.New("map in extra keys")
	}
	n, err := r.integer()
	return x.AppendInt(int64(n.bits)), err
}

// check applies the rules that hold across fields.
func check(ev *kvevents.Event) error {
	switch ev.Type {
	case kvevents.BlockStored:
		if ev.BlockSize <= 0 {
			return errors.New("BlockStored without a block_size")
		}
		if ev.Extra != nil && len(ev.Extra) != len(ev.Hashes) {
			return fmt.Errorf("BlockStored: %d extra_keys entries for %d blocks", len(ev.Extra), len(ev.Hashes))
		}
		if len(ev.Tokens) == 0 && ev.Medium != kvevents.MediumGPU {
			return nil // offloaded copy of blocks known by engine hash
		}
		// token_ids span every block of the range, block_hashes only the
		// ones the group kept: a Mamba or sliding-window group skips its
		// null blocks (vLLM's cache_full_blocks), so there may be more
		// blocks of tokens than hashes, never fewer.
		if len(ev.Tokens)%ev.BlockSize != 0 || len(ev.Tokens) < len(ev.Hashes)*ev.BlockSize {
			return fmt.Errorf("BlockStored: %d token ids for %d blocks of %d", len(ev.Tokens), len(ev.Hashes), ev.BlockSize)
		}
	case kvevents.BlockRemoved, kvevents.AllBlocksCleared:
	default:
		return errUnknownTag
	}
	return nil
}
