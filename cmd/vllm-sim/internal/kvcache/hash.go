package kvcache

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
)

// Hash is an engine block hash: 32 bytes, as vLLM's sha256 algorithms give.
// Routers cannot reproduce it (the root is random unless PYTHONHASHSEED is
// set, and the serialisation is the simulator's own), exactly as with vLLM's
// default algorithm; they must key blocks by token ids.
type Hash [32]byte

// Uint64 is the hash as vLLM sends it with VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES
// (the default): the last 8 bytes read big-endian.
func (h Hash) Uint64() uint64 { return binary.BigEndian.Uint64(h[24:]) }

// Hasher chains block hashes from a root, like vLLM's hash_block_tokens
// starting at NONE_HASH.
type Hasher struct{ root Hash }

// NewHasher seeds the chain. With seed empty the root is random per process,
// as vLLM's is when PYTHONHASHSEED is unset.
func NewHasher(seed string) Hasher {
	var h Hasher
	if seed == "" {
		if _, err := rand.Read(h.root[:]); err != nil {
			panic("kvcache: no randomness: " + err.Error())
		}
		return h
	}
	h.root = sha256.Sum256([]byte(seed))
	return h
}

// Block hashes one full block: its parent's hash (the root for the first
// block), its token ids and the block's cache-affecting extra keys, vLLM's
// extra_keys tuple (the LoRA name, then the cache_salt on block 0). Each key
// is length-prefixed, so ("a", "") and ("", "a") hash apart.
func (h Hasher) Block(parent *Hash, tokens []uint32, extra []string) Hash {
	n := 32 + 4*len(tokens) + 1
	for _, x := range extra {
		n += binary.MaxVarintLen64 + len(x)
	}
	buf := make([]byte, 0, n)
	if parent == nil {
		buf = append(buf, h.root[:]...)
	} else {
		buf = append(buf, parent[:]...)
	}
	for _, t := range tokens {
		buf = binary.LittleEndian.AppendUint32(buf, t)
	}
	buf = append(buf, byte(len(extra)))
	for _, x := range extra {
		buf = binary.AppendUvarint(buf, uint64(len(x)))
		buf = append(buf, x...)
	}
	return sha256.Sum256(buf)
}
