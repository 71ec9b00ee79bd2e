package kvvectors

// Vectors of a hybrid model's events: a KV-cache group other than the first
// full-attention one, as vLLM's BlockPool.cache_full_blocks and
// _maybe_evict_cached_block send them (docs/VLLM_PARITY.md pins the
// commit). They reuse the capture's hashes and tokens. Transcribed by hand
// from the struct definitions like the rest of this package:
//
//   - group_idx is the group's index in the KV cache config;
//     kv_cache_spec_kind its KVCacheSpecKind value; kv_cache_spec_sliding_window
//     the window for "sliding_window", else None (and then left out of the
//     map form, which omits None defaults);
//   - null blocks (a Mamba group's positions without saved state, a sliding
//     window's blocks before the window) are skipped: block_hashes and
//     extra_keys name the kept blocks, token_ids span the whole range;
//   - extra_keys is None when no block was kept.
const (
	strSliding  = "ae 73 6c 69 64 69 6e 67 5f 77 69 6e 64 6f 77" // "sliding_window"
	strMamba    = "a5 6d 61 6d 62 61"                            // "mamba"
	window128   = "cc 80"
	group1      = "01"
	hashes42    = "91 2a" // [42]: the second block only
	hashesNone  = "90"
	extraNil1   = "91 c0"
	keyWindow   = "bc 6b 76 5f 63 61 63 68 65 5f 73 70 65 63 5f 73 6c 69 64 69 6e 67 5f 77 69 6e 64 6f 77"
	storedHead  = strBlockStore + " "
	gpuNoLoRA   = "04 " + nilv + " " + strGPU + " " + nilv // block_size 4, lora_id, medium, lora_name
	batchPrefix = batch3Hdr + " " + events1 + " "
)

// Window128 is the sliding window of the hybrid vectors' second group.
const Window128 = 128

// Hybrid lists the hybrid vectors: group 1 of full,sliding_window:128 and
// of full,mamba, in both encodings.
func Hybrid() []Vector {
	sw := Event{
		Type: "BlockStored", BlockHashes: []uint64{Hash1, Hash2}, TokenIDs: Tokens, BlockSize: 4,
		Medium: strp("GPU"), ExtraKeys: []any{nil, nil}, HasExtraKeysList: true,
		GroupIdx: intp(1), KVCacheSpecKind: strp("sliding_window"), SlidingWindow: intp(Window128),
	}
	mamba := Event{
		Type: "BlockStored", BlockHashes: []uint64{Hash2}, TokenIDs: Tokens, BlockSize: 4,
		Medium: strp("GPU"), ExtraKeys: []any{nil}, HasExtraKeysList: true,
		GroupIdx: intp(1), KVCacheSpecKind: strp("mamba"),
	}
	mambaNone := Event{
		Type: "BlockStored", BlockHashes: []uint64{}, TokenIDs: Tokens, BlockSize: 4,
		Medium: strp("GPU"), GroupIdx: intp(1), KVCacheSpecKind: strp("mamba"),
	}
	removed := Event{Type: "BlockRemoved", BlockHashes: []uint64{Hash1}, Medium: strp("GPU"), GroupIdx: intp(1)}
	vec := func(name, ev string, want Event) Vector {
		return Vector{
			Name:    name,
			Payload: mustHex(batchPrefix + ev + " " + rank0),
			Want:    Batch{TS: TS, Events: []Event{want}, DataParallelRank: intp(0)},
		}
	}
	return []Vector{
		vec("BlockStored/array12 sliding_window",
			arrayHdr(12)+" "+storedHead+hashes2+" "+nilv+" "+tokens8+" "+gpuNoLoRA+" "+extraNil2+" "+group1+" "+strSliding+" "+window128, sw),
		vec("BlockStored/map sliding_window",
			"8c "+keyType+" "+storedHead+
				keyHashes+" "+hashes2+" "+keyParent+" "+nilv+" "+keyTokens+" "+tokens8+" "+
				keyBlockSize+" 04 "+keyLoRAID+" "+nilv+" "+keyMedium+" "+strGPU+" "+keyLoRAName+" "+nilv+" "+
				keyExtraKeys+" "+extraNil2+" "+keyGroupIdx+" "+group1+" "+keySpecKind+" "+strSliding+" "+keyWindow+" "+window128, sw),
		vec("BlockStored/array10 sliding_window",
			arrayHdr(10)+" "+storedHead+hashes2+" "+nilv+" "+tokens8+" "+gpuNoLoRA+" "+extraNil2+" "+group1,
			Event{Type: sw.Type, BlockHashes: sw.BlockHashes, TokenIDs: Tokens, BlockSize: 4, Medium: sw.Medium,
				ExtraKeys: sw.ExtraKeys, HasExtraKeysList: true, GroupIdx: intp(1)}),
		vec("BlockStored/array12 mamba null block skipped",
			arrayHdr(12)+" "+storedHead+hashes42+" "+nilv+" "+tokens8+" "+gpuNoLoRA+" "+extraNil1+" "+group1+" "+strMamba+" "+nilv, mamba),
		vec("BlockStored/map mamba null block skipped",
			"8b "+keyType+" "+storedHead+
				keyHashes+" "+hashes42+" "+keyParent+" "+nilv+" "+keyTokens+" "+tokens8+" "+
				keyBlockSize+" 04 "+keyLoRAID+" "+nilv+" "+keyMedium+" "+strGPU+" "+keyLoRAName+" "+nilv+" "+
				keyExtraKeys+" "+extraNil1+" "+keyGroupIdx+" "+group1+" "+keySpecKind+" "+strMamba, mamba),
		vec("BlockStored/array12 mamba all null",
			arrayHdr(12)+" "+storedHead+hashesNone+" "+nilv+" "+tokens8+" "+gpuNoLoRA+" "+nilv+" "+group1+" "+strMamba+" "+nilv, mambaNone),
		vec("BlockStored/map mamba all null",
			"8a "+keyType+" "+storedHead+
				keyHashes+" "+hashesNone+" "+keyParent+" "+nilv+" "+keyTokens+" "+tokens8+" "+
				keyBlockSize+" 04 "+keyLoRAID+" "+nilv+" "+keyMedium+" "+strGPU+" "+keyLoRAName+" "+nilv+" "+
				keyGroupIdx+" "+group1+" "+keySpecKind+" "+strMamba, mambaNone),
		vec("BlockRemoved/array4 group 1",
			arrayHdr(4)+" "+strBlockRem+" "+hashes1+" "+strGPU+" "+group1, removed),
		vec("BlockRemoved/map group 1",
			"84 "+keyType+" "+strBlockRem+" "+keyHashes+" "+hashes1+" "+keyMedium+" "+strGPU+" "+keyGroupIdx+" "+group1, removed),
	}
}
