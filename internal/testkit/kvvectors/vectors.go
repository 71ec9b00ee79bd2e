package kvvectors

import (
	"encoding/hex"
	"strings"
)

// Event is the meaning of one encoded event, in the terms of vLLM's Python
// structs. Pointer fields are nil where vLLM sends None or, in older schemas,
// where the field does not exist yet.
type Event struct {
	Type             string // "BlockStored", "BlockRemoved" or "AllBlocksCleared"
	BlockHashes      []uint64
	ParentBlockHash  *uint64
	TokenIDs         []uint32
	BlockSize        int
	LoRAID           *int
	Medium           *string
	LoRAName         *string
	ExtraKeys        []any // one entry per block; nil entries for plain text
	GroupIdx         *int
	KVCacheSpecKind  *string
	SlidingWindow    *int
	HasExtraKeysList bool // extra_keys was a list (possibly of nils), not None
}

// Batch is the meaning of one payload frame.
type Batch struct {
	TS               float64
	Events           []Event
	DataParallelRank *int // nil in the 2-element v0.9 schema
}

// Vector is one payload frame with its meaning.
type Vector struct {
	Name    string
	Payload []byte
	Want    Batch
}

// Seq5 is frame 1 of the annotated capture: sequence number 5, big-endian.
var Seq5 = mustHex("00 00 00 00 00 00 00 05")

// EndSeq is the replay end marker's sequence frame, (-1).to_bytes(8, signed).
var EndSeq = mustHex("ff ff ff ff ff ff ff ff")

// TS is the capture's timestamp; its float64 bytes are TSBytes.
const TS = 1789095808.8378847

// Hash1 and Hash2 are the capture's two block hashes (the second forced small
// to show fixint encoding).
const (
	Hash1 uint64 = 15760518052499183552
	Hash2 uint64 = 42
)

// Tokens are the capture's eight token ids (block_size 4, two blocks).
var Tokens = []uint32{151644, 872, 198, 9064, 374, 279, 6722, 315}

// Byte chunks, named after what they encode.
const (
	batch3Hdr     = "93 cb 41 da a8 db e0 35 9f e7" // array(3), float64 ts
	batch2Hdr     = "92 cb 41 da a8 db e0 35 9f e7" // array(2) (v0.9 schema), float64 ts
	events1       = "91"                            // array(1)
	strBlockStore = "ab 42 6c 6f 63 6b 53 74 6f 72 65 64"
	strBlockRem   = "ac 42 6c 6f 63 6b 52 65 6d 6f 76 65 64"
	strAllCleared = "b0 41 6c 6c 42 6c 6f 63 6b 73 43 6c 65 61 72 65 64"
	hashes2       = "92 cf da b8 9b aa 7b 58 57 c0 2a" // [Hash1, 42]
	hashes1       = "91 cf da b8 9b aa 7b 58 57 c0"    // [Hash1]
	tokens8       = "98 ce 00 02 50 5c cd 03 68 cc c6 cd 23 68 cd 01 76 cd 01 17 cd 1a 42 cd 01 3b"
	nilv          = "c0"
	strGPU        = "a3 47 50 55"
	strCPU        = "a3 43 50 55"
	extraNil2     = "92 c0 c0"
	strFullAttn   = "ae 66 75 6c 6c 5f 61 74 74 65 6e 74 69 6f 6e"
	rank0         = "00"

	keyType      = "a4 74 79 70 65"
	keyHashes    = "ac 62 6c 6f 63 6b 5f 68 61 73 68 65 73"
	keyParent    = "b1 70 61 72 65 6e 74 5f 62 6c 6f 63 6b 5f 68 61 73 68"
	keyTokens    = "a9 74 6f 6b 65 6e 5f 69 64 73"
	keyBlockSize = "aa 62 6c 6f 63 6b 5f 73 69 7a 65"
	keyLoRAID    = "a7 6c 6f 72 61 5f 69 64"
	keyMedium    = "a6 6d 65 64 69 75 6d"
	keyLoRAName  = "a9 6c 6f 72 61 5f 6e 61 6d 65"
	keyExtraKeys = "aa 65 78 74 72 61 5f 6b 65 79 73"
	keyGroupIdx  = "a9 67 72 6f 75 70 5f 69 64 78"
	keySpecKind  = "b2 6b 76 5f 63 61 63 68 65 5f 73 70 65 63 5f 6b 69 6e 64"
)

// storedFields are BlockStored's fields after the tag, in schema order, each
// as array-form bytes for the capture's event. A schema of length n (tag
// included) carries the first n-1.
var storedFields = []string{
	hashes2,     // block_hashes
	nilv,        // parent_block_hash
	tokens8,     // token_ids
	"04",        // block_size
	nilv,        // lora_id
	strGPU,      // medium (7)
	nilv,        // lora_name (8)
	extraNil2,   // extra_keys (9)
	"00",        // group_idx (10)
	strFullAttn, // kv_cache_spec_kind (11, with 12)
	nilv,        // kv_cache_spec_sliding_window (12)
}

// StoredArrayLengths are the BlockStored array lengths vLLM has shipped.
var StoredArrayLengths = []int{6, 7, 8, 9, 10, 12}

// RemovedArrayLengths are the BlockRemoved array lengths vLLM has shipped.
var RemovedArrayLengths = []int{2, 3, 4}

// StoredArray returns a batch holding the capture's BlockStored event in the
// array schema of length n (one of StoredArrayLengths), wrapped in the
// 3-element batch, or the 2-element batch when n is 6 (the v0.9 schema).
func StoredArray(n int) Vector {
	fields := storedFields[:n-1]
	hdr, tail := batch3Hdr, rank0
	if n == 6 {
		hdr, tail = batch2Hdr, ""
	}
	ev := arrayHdr(n) + " " + strBlockStore + " " + strings.Join(fields, " ")
	want := capturedStored(n)
	b := Batch{TS: TS, Events: []Event{want}}
	if n != 6 {
		b.DataParallelRank = intp(0)
	}
	return Vector{
		Name:    "BlockStored/array" + itoa(n),
		Payload: mustHex(hdr + " " + events1 + " " + ev + " " + tail),
		Want:    b,
	}
}

func capturedStored(n int) Event {
	e := Event{
		Type:        "BlockStored",
		BlockHashes: []uint64{Hash1, Hash2},
		TokenIDs:    Tokens,
		BlockSize:   4,
	}
	if n >= 7 {
		e.Medium = strp("GPU")
	}
	if n >= 9 {
		e.ExtraKeys = []any{nil, nil}
		e.HasExtraKeysList = true
	}
	if n >= 10 {
		e.GroupIdx = intp(0)
	}
	if n >= 12 {
		e.KVCacheSpecKind = strp("full_attention")
	}
	return e
}

// StoredMap is the capture's BlockStored event in map form (211 bytes).
func StoredMap() Vector {
	ev := "8b " + keyType + " " + strBlockStore + " " +
		keyHashes + " " + hashes2 + " " +
		keyParent + " " + nilv + " " +
		keyTokens + " " + tokens8 + " " +
		keyBlockSize + " 04 " +
		keyLoRAID + " " + nilv + " " +
		keyMedium + " " + strGPU + " " +
		keyLoRAName + " " + nilv + " " +
		keyExtraKeys + " " + extraNil2 + " " +
		keyGroupIdx + " 00 " +
		keySpecKind + " " + strFullAttn
	return Vector{
		Name:    "BlockStored/map",
		Payload: mustHex(batch3Hdr + " " + events1 + " " + ev + " " + rank0),
		Want:    Batch{TS: TS, Events: []Event{capturedStored(12)}, DataParallelRank: intp(0)},
	}
}

// RemovedArray returns a BlockRemoved of Hash1 in the array schema of length n.
func RemovedArray(n int) Vector {
	fields := []string{hashes1, strGPU, "00"}[:n-1]
	e := Event{Type: "BlockRemoved", BlockHashes: []uint64{Hash1}}
	if n >= 3 {
		e.Medium = strp("GPU")
	}
	if n >= 4 {
		e.GroupIdx = intp(0)
	}
	// The 2-field BlockRemoved is the v0.9 schema, whose batch had no rank.
	hdr, tail := batch3Hdr, rank0
	b := Batch{TS: TS, Events: []Event{e}, DataParallelRank: intp(0)}
	if n == 2 {
		hdr, tail, b.DataParallelRank = batch2Hdr, "", nil
	}
	return Vector{
		Name:    "BlockRemoved/array" + itoa(n),
		Payload: mustHex(hdr + " " + events1 + " " + arrayHdr(n) + " " + strBlockRem + " " + strings.Join(fields, " ") + " " + tail),
		Want:    b,
	}
}

// RemovedMap is a BlockRemoved of Hash1 in map form.
func RemovedMap() Vector {
	ev := "84 " + keyType + " " + strBlockRem + " " + keyHashes + " " + hashes1 + " " +
		keyMedium + " " + strGPU + " " + keyGroupIdx + " 00"
	e := Event{Type: "BlockRemoved", BlockHashes: []uint64{Hash1}, Medium: strp("GPU"), GroupIdx: intp(0)}
	return Vector{
		Name:    "BlockRemoved/map",
		Payload: mustHex(batch3Hdr + " " + events1 + " " + ev + " " + rank0),
		Want:    Batch{TS: TS, Events: []Event{e}, DataParallelRank: intp(0)},
	}
}

// ClearedArray and ClearedMap are AllBlocksCleared in both forms.
func ClearedArray() Vector {
	return Vector{
		Name:    "AllBlocksCleared/array",
		Payload: mustHex(batch3Hdr + " " + events1 + " 91 " + strAllCleared + " " + rank0),
		Want:    Batch{TS: TS, Events: []Event{{Type: "AllBlocksCleared"}}, DataParallelRank: intp(0)},
	}
}

func ClearedMap() Vector {
	return Vector{
		Name:    "AllBlocksCleared/map",
		Payload: mustHex(batch3Hdr + " " + events1 + " 81 " + keyType + " " + strAllCleared + " " + rank0),
		Want:    Batch{TS: TS, Events: []Event{{Type: "AllBlocksCleared"}}, DataParallelRank: intp(0)},
	}
}

// CPUStoredArray is a BlockStored as vLLM's offloading connector sends it:
// medium "CPU", no token ids (so no per-block extra keys either), a parent,
// in the 12-field array schema.
func CPUStoredArray() Vector {
	ev := arrayHdr(12) + " " + strBlockStore + " " + hashes1 + " " +
		"2a" + " " + // parent_block_hash = 42
		"90" + " " + // token_ids = []
		"04 " + nilv + " " + strCPU + " " + nilv + " " + nilv + " 00 " + strFullAttn + " " + nilv
	e := Event{
		Type: "BlockStored", BlockHashes: []uint64{Hash1}, ParentBlockHash: u64p(42),
		TokenIDs: []uint32{}, BlockSize: 4, Medium: strp("CPU"), GroupIdx: intp(0),
		KVCacheSpecKind: strp("full_attention"),
	}
	return Vector{
		Name:    "BlockStored/cpu",
		Payload: mustHex(batch3Hdr + " " + events1 + " " + ev + " " + rank0),
		Want:    Batch{TS: TS, Events: []Event{e}, DataParallelRank: intp(0)},
	}
}

// All lists every vector above.
func All() []Vector {
	var vs []Vector
	for _, n := range StoredArrayLengths {
		vs = append(vs, StoredArray(n))
	}
	vs = append(vs, StoredMap())
	for _, n := range RemovedArrayLengths {
		vs = append(vs, RemovedArray(n))
	}
	return append(vs, RemovedMap(), ClearedArray(), ClearedMap(), CPUStoredArray())
}

func arrayHdr(n int) string { return hex.EncodeToString([]byte{0x90 | byte(n)}) }

func mustHex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic("kvvectors: bad hex: " + err.Error())
	}
	return b
}

func itoa(n int) string {
	if n >= 10 {
		return string(rune('0'+n/10)) + string(rune('0'+n%10))
	}
	return string(rune('0' + n))
}

func intp(v int) *int       { return &v }
func u64p(v uint64) *uint64 { return &v }
func strp(s string) *string { return &s }
