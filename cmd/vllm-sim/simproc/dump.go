package simproc

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Block is one entry of vllm-sim's ground-truth dump: a block its caches
// hold, with vLLM's engine hash and parent hash, its tokens and its tier.
type Block struct {
	Hash     uint64   `json:"hash"`
	Parent   *uint64  `json:"parent"` // nil for a first block
	TokenIDs []uint32 `json:"token_ids"`
	Medium   string   `json:"medium"` // "GPU" or "CPU"
	DPRank   int      `json:"dp_rank"`
	// GroupIdx is the block's KV-cache group; Kind and SlidingWindow are
	// that group's kv_cache_spec_kind and window (nil unless sliding).
	GroupIdx      int    `json:"group_idx"`
	Kind          string `json:"kv_cache_spec_kind"`
	SlidingWindow *int   `json:"kv_cache_spec_sliding_window"`
}

// Group is one KV-cache group of the simulated engine, in vLLM's order.
type Group struct {
	GroupIdx      int    `json:"group_idx"`
	Kind          string `json:"kv_cache_spec_kind"` // full_attention, sliding_window or mamba
	SlidingWindow *int   `json:"kv_cache_spec_sliding_window"`
}

// Dump is what GET /debug/kv/blocks answers: the ground truth a KV index
// is compared against in tests.
type Dump struct {
	BlockSize int     `json:"block_size"`
	Groups    []Group `json:"kv_cache_groups"`
	Blocks    []Block `json:"blocks"`
}

// ReadDump fetches the ground-truth dump of the simulator serving at url
// (a base URL such as Proc.URL).
func ReadDump(ctx context.Context, url string) (Dump, error) {
	var d Dump
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/debug/kv/blocks", nil)
	if err != nil {
		return d, fmt.Errorf("read vllm-sim dump: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return d, fmt.Errorf("read vllm-sim dump: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return d, fmt.Errorf("read vllm-sim dump: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		return d, fmt.Errorf("decode vllm-sim dump: %w", err)
	}
	return d, nil
}
