// Package blockkey computes llmgw's canonical block keys: one chained 64-bit
// hash per full block of token ids, computed the same way by the driver (from
// the token ids in vLLM's BlockStored events) and by the router (from the
// tokens of a prompt). Engine hashes never leave the driver; everything the
// router indexes or looks up is a Key from this package.
//
// # Layout (version 2)
//
// Every hash is XXH3-64 over a byte string, with a 64-bit seed.
//
//	root(lora)                 = XXH3(seed 0, "llmgw/blockkey/v2" 0x00 lora-name bytes)
//	key(parent, tokens, none)  = XXH3(seed parent, each token u32le)
//	key(parent, tokens, extra) = key(XXH3(seed parent ^ 0x9E3779B97F4A7C15, extra bytes), tokens, none)
//
// Seeding with the parent chains the blocks without copying: on
// little-endian machines a block's []uint32 already is its byte string and
// is hashed in place (the hash of a 16-token block costs a few nanoseconds,
// against about 45 ns for version 1, which copied the tokens behind a
// header and ran XXH64). XXH3 mixes the input length in, so blocks of
// different sizes differ. Extra keys are folded into the seed first; the
// tweak keeps that seed from being the key of a block whose token bytes
// spell the extra bytes, so a block with extra keys cannot share its key
// with a chain one block longer by such a choice of tokens.
// Keys steer routing only; vLLM isolates caches (cache_salt) with its own
// hashes, so a contrived collision costs a misroute, nothing more.
//
// The first block of a sequence chains from root(lora name), "" for the base
// model, so the LoRA name is mixed into every key of the chain. extra carries
// the cache-affecting extra keys of one block (vLLM's extra_keys entry less the
// LoRA name: cache_salt on block 0, multimodal identifiers, prompt-embedding
// digests), written with the Extra append methods; plain text has none.
// A block is keyed only when it is full: Keys drops a trailing partial block,
// as vLLM caches only full blocks.
//
// # Changing the layout
//
// Bump the version in rootPrefix and in this comment, then regenerate the
// golden keys with
//
//	go test ./internal/blockkey -run TestGolden -update
//
// Keys of different versions never match, so drivers and routers must be
// upgraded together; until then no prompt finds its blocks and requests are
// routed by load.
//
// The package is a leaf: it imports nothing of llmgw's.
package blockkey
