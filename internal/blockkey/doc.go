// Package blockkey computes llmgw's canonical block keys: one chained 64-bit
// hash per full block of token ids, computed the same way by the driver (from
// the token ids in vLLM's BlockStored events) and by the router (from the
// tokens of a prompt). Engine hashes never leave the driver; everything the
// router indexes or looks up is a Key from this package.
//
// # Layout (version 1)
//
// Every hash is XXH64 (seed 0) over a fixed little-endian byte layout.
//
//	root(lora)            = XXH64("llmgw/blockkey/v1" 0x00 lora-name bytes)
//	key(parent, tokens, extra) =
//	    XXH64(parent u64le | len(tokens) u32le | each token u32le |
//	          len(extra) u32le | extra bytes)
//
// The first block of a sequence chains from root(lora name), "" for the base
// model, so the LoRA name is mixed into every key of the chain. extra carries
// the cache-affecting extra keys of one block (vLLM's extra_keys entry less the
// LoRA name: cache_salt on block 0, multimodal identifiers, prompt-embedding
// digests), written with the Extra append methods; plain text has none.
// A block is keyed only when it is full: Keys drops a trailing partial block,
// as vLLM caches only full blocks.
//
// The package is a leaf: it imports nothing of llmgw's.
package blockkey
