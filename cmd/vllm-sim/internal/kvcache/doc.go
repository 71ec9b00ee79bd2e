// Package kvcache is vllm-sim's paged KV cache with prefix caching, modelled
// on vLLM v1's BlockPool and KVCacheManager: a fixed number of blocks, full
// blocks hashed in a parent chain, hits reusing blocks, finished requests
// leaving their blocks cached and free, and eviction of free blocks in LRU
// order only when a new block is needed.
//
// It records the KV events vLLM would publish, with vLLM's timing: a
// BlockStored when a block becomes full (prompt or decode; the engine
// computes a step's tokens as it schedules them, so that is the step that
// schedules the block's last token), a BlockRemoved
// only when a cached free block is reused for new data, and AllBlocksCleared
// on a prefix-cache reset. An optional CPU tier plays vLLM's offloading
// connector: its stores carry medium "CPU" and no token ids.
//
// A hybrid model's KV-cache groups (Config.Groups: full attention, sliding
// window, Mamba) share the pool's blocks as vLLM's hybrid KV cache manager
// shares its BlockPool: blocks are cached per (hash, group), a prefix hit is
// the length every group agrees on (hit.go, vLLM's HybridKVCacheCoordinator),
// window and Mamba groups free the blocks they no longer read, and each
// group's events carry its group_idx, kind and window. One full-attention
// group, the default, is the cache as it was before groups.
//
// A Pool is not safe for concurrent use; the engine's step loop owns it.
package kvcache
