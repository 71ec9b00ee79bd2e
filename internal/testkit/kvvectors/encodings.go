package kvvectors

// Vectors for encodings the annotated capture does not show but vLLM (or
// another msgpack encoder) can produce: the other block-hash encodings of
// reference section 1.4 and non-compact integer widths. Transcribed by hand
// like the rest of this package.

// BlockHashEncodings returns BlockRemoved events (4-field array schema) whose
// single block hash is encoded each way vLLM has sent hashes, with the uint64
// the reference says a consumer must read from it.
func BlockHashEncodings() []Vector {
	tests := []struct {
		name string
		hash string // msgpack bytes of the hash
		want uint64
	}{
		// Python hash() (builtin algorithm, before v0.10.2): negative int64.
		{"int64 negative", "d3 ff ff ff ff ff ff ff fe", 0xfffffffffffffffe},
		{"int32 negative", "d2 80 00 00 00", 0xffffffff80000000},
		{"int16 negative", "d1 ff 00", 0xffffffffffffff00},
		{"int8 negative", "d0 80", 0xffffffffffffff80},
		{"negative fixint", "ff", 0xffffffffffffffff},
		// Positive ints at every width (msgspec is compact; others are not).
		{"uint8", "cc ff", 0xff},
		{"uint16", "cd 01 00", 0x100},
		{"uint32", "ce 00 01 00 00", 0x10000},
		{"uint64", "cf da b8 9b aa 7b 58 57 c0", Hash1},
		{"int64 positive", "d3 00 00 00 00 00 00 00 2a", 42},
		// VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0: raw digest bytes; the last 8
		// bytes big-endian are the hash.
		{"bin sha256 32 bytes", "c4 20 " +
			"00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff " +
			"01 23 45 67 89 ab cd ef da b8 9b aa 7b 58 57 c0", Hash1},
		{"bin xxh3-128 16 bytes", "c4 10 01 23 45 67 89 ab cd ef da b8 9b aa 7b 58 57 c0", Hash1},
		{"bin 8 bytes", "c4 08 da b8 9b aa 7b 58 57 c0", Hash1},
		{"bin 3 bytes left-padded", "c4 03 01 02 03", 0x010203},
	}
	var vs []Vector
	for _, tt := range tests {
		ev := arrayHdr(4) + " " + strBlockRem + " 91 " + tt.hash + " " + strGPU + " 00"
		vs = append(vs, Vector{
			Name:    "BlockRemoved/hash " + tt.name,
			Payload: mustHex(batch3Hdr + " " + events1 + " " + ev + " " + rank0),
			Want: Batch{TS: TS, DataParallelRank: intp(0), Events: []Event{{
				Type: "BlockRemoved", BlockHashes: []uint64{tt.want}, Medium: strp("GPU"), GroupIdx: intp(0),
			}}},
		})
	}
	return vs
}

// WideIntegers is the capture's 9-field BlockStored written the way an
// encoder without compact integers writes sized Go integers (reference 1.4,
// llm-d-inference-sim): uint32 tokens as ce, uint64 hashes as cf, block
// size, group and rank as uint8/uint16, and ts as float64. The meaning is the
// capture's, with data_parallel_rank 1 and a parent hash.
func WideIntegers() Vector {
	ev := arrayHdr(9) + " " + strBlockStore + " " +
		"92 cf da b8 9b aa 7b 58 57 c0 cf 00 00 00 00 00 00 00 2a " + // hashes
		"cf 00 00 00 00 00 00 00 07 " + // parent 7
		"98 ce 00 02 50 5c ce 00 00 03 68 ce 00 00 00 c6 ce 00 00 23 68 " +
		"ce 00 00 01 76 ce 00 00 01 17 ce 00 00 1a 42 ce 00 00 01 3b " + // tokens
		"cd 00 04 " + // block_size as uint16
		nilv + " " + strGPU + " " + nilv + " " + extraNil2
	e := capturedStored(9)
	e.ParentBlockHash = u64p(7)
	return Vector{
		Name:    "BlockStored/wide integers",
		Payload: mustHex(batch3Hdr + " " + events1 + " " + ev + " cc 01"),
		Want:    Batch{TS: TS, Events: []Event{e}, DataParallelRank: intp(1)},
	}
}

// MapBatch is the capture's BlockRemoved inside a batch encoded as a map, the
// form one vLLM revision's EventBatch (without array_like) would produce
// (reference 1.4, "Whether the outer batch stays an array").
func MapBatch() Vector {
	ev := arrayHdr(4) + " " + strBlockRem + " " + hashes1 + " " + strGPU + " 00"
	return Vector{
		Name: "batch/map",
		Payload: mustHex("83 a2 74 73 cb 41 da a8 db e0 35 9f e7 " + // "ts"
			"a6 65 76 65 6e 74 73 " + events1 + " " + ev + " " + // "events"
			"b2 64 61 74 61 5f 70 61 72 61 6c 6c 65 6c 5f 72 61 6e 6b 02"), // "data_parallel_rank": 2
		Want: Batch{TS: TS, DataParallelRank: intp(2), Events: []Event{{
			Type: "BlockRemoved", BlockHashes: []uint64{Hash1}, Medium: strp("GPU"), GroupIdx: intp(0),
		}}},
	}
}

// LoRAStored is a 9-field BlockStored of one block for LoRA "sql" whose
// extra_keys entry is ("sql", "salt"): vLLM puts the LoRA name first and,
// on block 0, the cache_salt. A parent of nil makes it a chain's first block.
func LoRAStored() Vector {
	ev := arrayHdr(9) + " " + strBlockStore + " " + hashes1 + " " + nilv + " " +
		"94 ce 00 02 50 5c cd 03 68 cc c6 cd 23 68 " + // tokens 151644 872 198 9064
		"04 01 " + strGPU + " a3 73 71 6c " + // block_size 4, lora_id 1, "GPU", lora_name "sql"
		"91 92 a3 73 71 6c a4 73 61 6c 74" // extra_keys [("sql", "salt")]
	e := Event{
		Type: "BlockStored", BlockHashes: []uint64{Hash1}, TokenIDs: Tokens[:4], BlockSize: 4,
		LoRAID: intp(1), Medium: strp("GPU"), LoRAName: strp("sql"),
		ExtraKeys: []any{[]any{"sql", "salt"}}, HasExtraKeysList: true,
	}
	return Vector{
		Name:    "BlockStored/lora salt",
		Payload: mustHex(batch3Hdr + " " + events1 + " " + ev + " " + rank0),
		Want:    Batch{TS: TS, Events: []Event{e}, DataParallelRank: intp(0)},
	}
}

// UnknownEventAndFields is a batch of three events: an event type this
// schema does not know ("BlockMoved", to be skipped), a BlockStored in a
// future 13-field array schema (the 13th field to be ignored) and an
// AllBlocksCleared map with an unknown key. Want lists the two known events.
func UnknownEventAndFields() Vector {
	unknown := "92 aa 42 6c 6f 63 6b 4d 6f 76 65 64 2a"                                              // ["BlockMoved", 42]
	stored13 := arrayHdr(13) + " " + strBlockStore + " " + joinFields(storedFields) + " a3 6e 65 77" // + "new"
	cleared := "82 " + keyType + " " + strAllCleared + " a3 6e 65 77 c3"                             // "new": true
	want := capturedStored(12)
	return Vector{
		Name:    "batch/unknown event and fields",
		Payload: mustHex(batch3Hdr + " 93 " + unknown + " " + stored13 + " " + cleared + " " + rank0),
		Want:    Batch{TS: TS, Events: []Event{want, {Type: "AllBlocksCleared"}}, DataParallelRank: intp(0)},
	}
}

func joinFields(fs []string) string {
	s := ""
	for i, f := range fs {
		if i > 0 {
			s += " "
		}
		s += f
	}
	return s
}

// Extended lists the vectors of this file.
func Extended() []Vector {
	vs := BlockHashEncodings()
	return append(vs, WideIntegers(), MapBatch(), LoRAStored(), UnknownEventAndFields())
}
