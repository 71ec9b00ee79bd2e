package kvpub

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
)

// Format selects vLLM's event encoding.
type Format int

const (
	// Array is the encoding before vLLM PR #42892: events are tagged arrays
	// with every field of the schema present.
	Array Format = iota
	// Map is the encoding after PR #42892: events are maps keyed by field name
	// with "type" first and None-defaulted fields left out when None.
	Map
)

// StoredLengths are the BlockStored array lengths vLLM has shipped, oldest
// first; the schema of the other structs follows from it.
var StoredLengths = []int{6, 7, 8, 9, 10, 12}

// Schema fixes the encoding of every struct.
type Schema struct {
	Format    Format
	StoredLen int  // BlockStored array length (Array only); 12 is the newest
	IntHashes bool // VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES: uint64, else 32-byte bin
}

// Validate reports a schema vLLM never shipped.
func (s Schema) Validate() error {
	for _, n := range StoredLengths {
		if s.StoredLen == n {
			return nil
		}
	}
	return fmt.Errorf("BlockStored schema length %d was never shipped by vLLM (want one of %v)", s.StoredLen, StoredLengths)
}

// removedLen is BlockRemoved's array length in the schema era of StoredLen:
// medium came with the 7-field BlockStored, group_idx with the 10-field one.
func (s Schema) removedLen() int {
	switch {
	case s.StoredLen >= 10:
		return 4
	case s.StoredLen >= 7:
		return 3
	default:
		return 2
	}
}

// batchLen is EventBatch's array length: data_parallel_rank (PR #18925)
// predates medium (PR #19737), so only the v0.9 schema lacks it.
func (s Schema) batchLen() int {
	if s.StoredLen == 6 && s.Format == Array {
		return 2
	}
	return 3
}

// Encode appends one EventBatch payload to buf. Writes to a bytes.Buffer
// cannot fail, so the struct encoders check only the error of their last
// write; an unknown event kind is the one real error.
func Encode(buf *bytes.Buffer, s Schema, ts float64, events []kvcache.Event, dpRank int) error {
	e := msgpack.NewEncoder(buf)
	n := s.batchLen()
	if err := e.EncodeArrayLen(n); err != nil {
		return err
	}
	_ = e.EncodeFloat64(ts)
	_ = e.EncodeArrayLen(len(events))
	for i := range events {
		var err error
		if s.Format == Map {
			err = encodeMap(e, s, &events[i])
		} else {
			err = encodeArray(e, s, &events[i])
		}
		if err != nil {
			return fmt.Errorf("encode event %d: %w", i, err)
		}
	}
	if n == 3 {
		return e.EncodeInt(int64(dpRank))
	}
	return nil
}

func encodeHash(e *msgpack.Encoder, s Schema, h kvcache.Hash) error {
	if s.IntHashes {
		return e.EncodeUint(h.Uint64())
	}
	return e.EncodeBytes(h[:])
}

func encodeHashes(e *msgpack.Encoder, s Schema, hs []kvcache.Hash) error {
	if err := e.EncodeArrayLen(len(hs)); err != nil {
		return err
	}
	for _, h := range hs {
		if err := encodeHash(e, s, h); err != nil {
			return err
		}
	}
	return nil
}

func encodeOptHash(e *msgpack.Encoder, s Schema, h *kvcache.Hash) error {
	if h == nil {
		return e.EncodeNil()
	}
	return encodeHash(e, s, *h)
}

func encodeTokens(e *msgpack.Encoder, toks []uint32) error {
	if err := e.EncodeArrayLen(len(toks)); err != nil {
		return err
	}
	for _, t := range toks {
		if err := e.EncodeUint(uint64(t)); err != nil {
			return err
		}
	}
	return nil
}

func encodeOptString(e *msgpack.Encoder, v string) error {
	if v == "" {
		return e.EncodeNil()
	}
	return e.EncodeString(v)
}

func encodeOptInt(e *msgpack.Encoder, v int) error {
	if v == 0 {
		return e.EncodeNil()
	}
	return e.EncodeInt(int64(v))
}

// encodeExtraKeys writes vLLM's per-block extra keys: nil for a plain text
// block, else the block's tuple (the LoRA name, then the cache_salt on block
// 0). A store without tokens (the CPU tier's) carries None.
func encodeExtraKeys(e *msgpack.Encoder, ev *kvcache.Event) error {
	if !hasExtraKeys(ev) {
		return e.EncodeNil()
	}
	if err := e.EncodeArrayLen(len(ev.Hashes)); err != nil {
		return err
	}
	for i := range ev.Hashes {
		var keys []string
		if i < len(ev.Extra) {
			keys = ev.Extra[i]
		}
		if len(keys) == 0 {
			if err := e.EncodeNil(); err != nil {
				return err
			}
			continue
		}
		_ = e.EncodeArrayLen(len(keys))
		for _, k := range keys {
			if err := e.EncodeString(k); err != nil {
				return err
			}
		}
	}
	return nil
}

// hasExtraKeys reports whether a BlockStored carries extra_keys: vLLM sends
// None when the list would be empty (`extra_keys_list if extra_keys_list
// else None`): a store without tokens (the CPU tier's) and a hybrid group's
// store whose blocks were all null.
func hasExtraKeys(ev *kvcache.Event) bool { return len(ev.Tokens) > 0 && len(ev.Hashes) > 0 }

// specKind is the event's kv_cache_spec_kind; an event built without one is
// the full-attention group's.
func specKind(ev *kvcache.Event) string {
	if ev.SpecKind == "" {
		return string(kvcache.FullAttention)
	}
	return string(ev.SpecKind)
}

func encodeArray(e *msgpack.Encoder, s Schema, ev *kvcache.Event) error {
	switch ev.Kind {
	case kvcache.BlockStored:
		n := s.StoredLen
		_ = e.EncodeArrayLen(n)
		_ = e.EncodeString(string(ev.Kind))
		_ = encodeHashes(e, s, ev.Hashes)
		_ = encodeOptHash(e, s, ev.Parent)
		_ = encodeTokens(e, ev.Tokens)
		_ = e.EncodeInt(int64(ev.BlockSize))
		err := encodeOptInt(e, ev.LoRAID) // lora_id
		if n >= 7 {
			err = e.EncodeString(ev.Medium)
		}
		if n >= 8 {
			err = encodeOptString(e, ev.LoRAName)
		}
		if n >= 9 {
			err = encodeExtraKeys(e, ev)
		}
		if n >= 10 {
			err = e.EncodeInt(int64(ev.Group)) // group_idx
		}
		if n >= 12 {
			_ = e.EncodeString(specKind(ev))
			err = encodeOptInt(e, ev.Window) // kv_cache_spec_sliding_window
		}
		return err
	case kvcache.BlockRemoved:
		n := s.removedLen()
		_ = e.EncodeArrayLen(n)
		_ = e.EncodeString(string(ev.Kind))
		err := encodeHashes(e, s, ev.Hashes)
		if n >= 3 {
			err = e.EncodeString(ev.Medium)
		}
		if n >= 4 {
			err = e.EncodeInt(int64(ev.Group)) // group_idx
		}
		return err
	case kvcache.AllBlocksCleared:
		_ = e.EncodeArrayLen(1)
		return e.EncodeString(string(ev.Kind))
	}
	return fmt.Errorf("unknown event kind %q", ev.Kind)
}

func encodeMap(e *msgpack.Encoder, s Schema, ev *kvcache.Event) error {
	switch ev.Kind {
	case kvcache.BlockStored:
		// extra_keys and kv_cache_spec_sliding_window default to None, so a
		// store without them omits the key (msgspec's omit_defaults).
		withExtra := hasExtraKeys(ev)
		n := 10
		if withExtra {
			n++
		}
		if ev.Window != 0 {
			n++
		}
		_ = e.EncodeMapLen(n)
		_ = e.EncodeString("type")
		_ = e.EncodeString(string(ev.Kind))
		_ = e.EncodeString("block_hashes")
		_ = encodeHashes(e, s, ev.Hashes)
		_ = e.EncodeString("parent_block_hash")
		_ = encodeOptHash(e, s, ev.Parent)
		_ = e.EncodeString("token_ids")
		_ = encodeTokens(e, ev.Tokens)
		_ = e.EncodeString("block_size")
		_ = e.EncodeInt(int64(ev.BlockSize))
		_ = e.EncodeString("lora_id")
		_ = encodeOptInt(e, ev.LoRAID)
		_ = e.EncodeString("medium")
		_ = e.EncodeString(ev.Medium)
		_ = e.EncodeString("lora_name")
		_ = encodeOptString(e, ev.LoRAName)
		if withExtra {
			_ = e.EncodeString("extra_keys")
			_ = encodeExtraKeys(e, ev)
		}
		_ = e.EncodeString("group_idx")
		_ = e.EncodeInt(int64(ev.Group))
		_ = e.EncodeString("kv_cache_spec_kind")
		err := e.EncodeString(specKind(ev))
		if ev.Window != 0 {
			_ = e.EncodeString("kv_cache_spec_sliding_window")
			err = e.EncodeInt(int64(ev.Window))
		}
		return err
	case kvcache.BlockRemoved:
		_ = e.EncodeMapLen(4)
		_ = e.EncodeString("type")
		_ = e.EncodeString(string(ev.Kind))
		_ = e.EncodeString("block_hashes")
		_ = encodeHashes(e, s, ev.Hashes)
		_ = e.EncodeString("medium")
		_ = e.EncodeString(ev.Medium)
		_ = e.EncodeString("group_idx")
		return e.EncodeInt(int64(ev.Group))
	case kvcache.AllBlocksCleared:
		_ = e.EncodeMapLen(1)
		_ = e.EncodeString("type")
		return e.EncodeString(string(ev.Kind))
	}
	return fmt.Errorf("unknown event kind %q", ev.Kind)
}
