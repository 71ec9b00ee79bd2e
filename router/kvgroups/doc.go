// Package kvgroups computes a replica's prefix-cache hit the way vLLM's
// hybrid KV cache coordinator does, over all of the replica's KV-cache
// groups (one per layer type: full attention, sliding window, Mamba).
//
// # The rule
//
// A full-attention group needs every block of the prefix; a sliding-window
// group only the blocks inside the window that ends at the hit; a Mamba
// group its state saved at exactly the hit position. The hit is the
// longest length on which every group agrees: starting from the
// full-attention hit, each other group shortens the candidate length to
// its own longest hit within it, until no group shortens it (vLLM's
// HybridKVCacheCoordinator.find_longest_cache_hit).
//
// # Layout
//
// Registry holds each replica's layout: from its events (kvwire version 2
// carries every group's kind, window and block size), or, until its first
// event, from the llmgw-kv-cache-groups Consul meta
// ("full,sliding_window:128"; see ParseLayout). A replica with neither has
// one full-attention group.
//
// # Cost
//
// Index wraps the router's per-model block index (router/index.Models)
// and sits above its public API: the primary (first full-attention) group
// lives in the model's own index, exactly as before, and every other group
// in an index of its own (IndexName). A lookup first asks the model's
// index, as the scheduler always did; only when a candidate's layout is
// hybrid does it ask the other groups' indexes, key by key, for the blocks
// the rule needs. A fleet of full-attention replicas pays one atomic load
// per lookup.
//
// It must not import router packages other than router/index: the
// ingest and the scheduler call in here.
package kvgroups
