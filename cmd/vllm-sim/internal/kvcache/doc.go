// Package kvcache is vllm-sim's paged KV cache with prefix caching, modelled
// on vLLM v1's BlockPool and KVCacheManager: a fixed number of blocks, full
// blocks hashed in a parent chain, hits reusing blocks, finished requests
// leaving their blocks cached and free, and eviction of free blocks in LRU
// order only when a new block is needed.
//
// It records the KV events vLLM would publish, with vLLM's timing: a
// BlockStored when a block becomes full (prompt or decode), a BlockRemoved
// only when a cached free block is reused for new data, and AllBlocksCleared
// on a prefix-cache reset. An optional CPU tier plays vLLM's offloading
// connector: its stores carry medium "CPU" and no token ids.
//
// A Pool is not safe for concurrent use; the engine's step loop owns it.
package kvcache
