package blockkey

import (
	"encoding/binary"
	"math"
	"slices"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// Key is a canonical block key. The zero Key is never produced by Chain for
// real input in practice, but callers must not rely on that: use a separate
// flag for "no key".
type Key uint64

// rootPrefix versions the layout: changing the layout changes every root and
// so every key, which keeps old and new keys from ever matching.
const rootPrefix = "llmgw/blockkey/v2\x00"

// extraTweak separates the seeds of blocks with extra keys from chain keys,
// so that no choice of tokens can make a block with extra keys collide with
// a chain that has one block more (see the package doc).
const extraTweak = 0x9E3779B97F4A7C15

// Root returns the key a chain of blocks for the given LoRA name ("" for the
// base model) starts from. It is the parent of the first block.
func Root(loraName string) Key {
	var buf [64]byte
	b := append(append(buf[:0], rootPrefix...), loraName...)
	return Key(xxh3.Hash(b))
}

// Chain returns the key of one full block of tokens following parent, with
// the block's cache-affecting extra keys (nil for none). It does not
// allocate for blocks of up to stackTokens tokens, on any platform, and for
// none on little-endian ones, where the token ids are hashed in place.
func Chain(parent Key, tokens []uint32, extra Extra) Key {
	seed := uint64(parent)
	if len(extra) > 0 {
		seed = xxh3.HashSeed(extra, seed^extraTweak)
	}
	if nativeLE {
		return Key(xxh3.HashSeed(leView(tokens), seed))
	}
	var buf [4 * stackTokens]byte
	return Key(xxh3.HashSeed(appendLE(buf[:0], tokens), seed))
}

// stackTokens bounds the portable path's on-stack buffer.
const stackTokens = 64

// nativeLE reports whether uint32s are stored little-endian, so that a
// []uint32 already is the layout's byte string.
var nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// leView returns the memory of tokens as bytes: the layout's byte string on
// little-endian platforms only.
func leView(tokens []uint32) []byte {
	if len(tokens) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&tokens[0])), 4*len(tokens))
}

// appendLE appends tokens in the layout's byte order: the portable path.
func appendLE(b []byte, tokens []uint32) []byte {
	for _, t := range tokens {
		b = binary.LittleEndian.AppendUint32(b, t)
	}
	return b
}

// Keys appends to dst the keys of every full block of tokens, chaining from
// parent, with no extra keys, and returns the extended slice. Tokens of a
// trailing partial block are not keyed. blockSize must be positive; a
// non-positive size keys nothing.
func Keys(dst []Key, parent Key, tokens []uint32, blockSize int) []Key {
	if blockSize <= 0 {
		return dst
	}
	dst = slices.Grow(dst, len(tokens)/blockSize)
	if !nativeLE {
		for len(tokens) >= blockSize {
			parent = Chain(parent, tokens[:blockSize], nil)
			dst = append(dst, parent)
			tokens = tokens[blockSize:]
		}
		return dst
	}
	// Chain's little-endian path, inlined: this loop is the router's
	// per-request hashing, one call per block; 16-token blocks (64 bytes)
	// take the fixed-size hash.
	b := leView(tokens)
	n := 4 * blockSize
	if n == 64 {
		return chain64(dst, parent, b)
	}
	for ; len(b) >= n; b = b[n:] {
		parent = Key(xxh3.HashSeed(b[:n], uint64(parent)))
		dst = append(dst, parent)
	}
	return dst
}

// Extra is the canonical encoding of one block's cache-affecting extra keys:
// a sequence of typed items, each a kind byte followed by its value. Build it
// with the Append methods; the zero value means "no extra keys". Two blocks
// with the same tokens and parent get the same key only if their Extra bytes
// are equal.
type Extra []byte

// Item kinds in Extra's encoding.
const (
	kindString byte = 's' // u32le length, bytes
	kindBytes  byte = 'b' // u32le length, bytes
	kindInt    byte = 'i' // i64le
	kindFloat  byte = 'f' // IEEE-754 bits, u64le
	kindList   byte = 'l' // u32le item count, then the items
	kindNil    byte = 'n' // no value
)

// AppendString adds a text item (e.g. a cache_salt or a multimodal hash).
func (e Extra) AppendString(s string) Extra {
	e = append(e, kindString)
	e = binary.LittleEndian.AppendUint32(e, uint32(len(s)))
	return append(e, s...)
}

// AppendBytes adds a binary item (e.g. a prompt-embeddings digest).
func (e Extra) AppendBytes(b []byte) Extra {
	e = append(e, kindBytes)
	e = binary.LittleEndian.AppendUint32(e, uint32(len(b)))
	return append(e, b...)
}

// AppendInt adds an integer item (e.g. a multimodal item's offset).
func (e Extra) AppendInt(v int64) Extra {
	e = append(e, kindInt)
	return binary.LittleEndian.AppendUint64(e, uint64(v))
}

// AppendFloat adds a floating-point item.
func (e Extra) AppendFloat(v float64) Extra {
	e = append(e, kindFloat)
	return binary.LittleEndian.AppendUint64(e, math.Float64bits(v))
}

// AppendList starts a nested list of n items (e.g. vLLM's older
// (identifier, offset) multimodal tuples); the next n items belong to it.
func (e Extra) AppendList(n int) Extra {
	e = append(e, kindList)
	return binary.LittleEndian.AppendUint32(e, uint32(n))
}

// AppendNil adds an empty item.
func (e Extra) AppendNil() Extra { return append(e, kindNil) }

// PromptKeys appends the keys of a request's full blocks as vLLM caches
// them, for the router to look up: the chain starts at Root(loraName), and
// block 0 carries the request's cache_salt ("" for none) as its only extra
// key, as vLLM mixes the salt into the first block only. Multimodal and
// prompt-embedding requests need Chain with their own Extra per block.
func PromptKeys(dst []Key, loraName, cacheSalt string, tokens []uint32, blockSize int) []Key {
	if blockSize <= 0 || len(tokens) < blockSize {
		return dst
	}
	parent := Root(loraName)
	if cacheSalt != "" {
		parent = Chain(parent, tokens[:blockSize], Extra(nil).AppendString(cacheSalt))
		dst = append(dst, parent)
		tokens = tokens[blockSize:]
	}
	return Keys(dst, parent, tokens, blockSize)
}
