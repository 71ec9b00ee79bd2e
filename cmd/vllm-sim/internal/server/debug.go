package server

import (
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
)

// debugBlocks lists every block the caches hold: the ground truth a KV index
// is compared against in tests.
func (s *Server) debugBlocks(w http.ResponseWriter, r *http.Request) {
	blocks := []blockJSON{}
	groups := []groupJSON{}
	for _, rank := range s.ranks {
		var infos []kvcache.BlockInfo
		var specs []kvcache.GroupSpec
		if err := rank.Engine.Do(r.Context(), func(p *kvcache.Pool) { infos, specs = p.Blocks(), p.Groups() }); err != nil {
			writeError(w, err)
			return
		}
		if len(groups) == 0 {
			for i, g := range specs {
				groups = append(groups, groupJSON{GroupIdx: i, Kind: string(g.Kind), SlidingWindow: optWindow(g)})
			}
		}
		for _, b := range infos {
			j := blockJSON{
				Hash: b.Hash.Uint64(), HashHex: hex.EncodeToString(b.Hash[:]), TokenIDs: b.Tokens, Medium: b.Medium, DPRank: rank.ID, RefCnt: b.RefCnt,
				GroupIdx: b.Group, Kind: string(b.Spec.Kind), SlidingWindow: optWindow(b.Spec),
			}
			if b.Parent != nil {
				p := b.Parent.Uint64()
				j.Parent = &p
			}
			blocks = append(blocks, j)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"block_size": s.opts.BlockSize, "kv_cache_groups": groups, "blocks": blocks})
}

// optWindow is a group's sliding window, nil for other kinds (None in vLLM).
func optWindow(g kvcache.GroupSpec) *int {
	if g.Kind != kvcache.SlidingWindow {
		return nil
	}
	w := g.Window
	return &w
}

// groupJSON describes one KV-cache group of the dump, as vLLM's events
// name it.
type groupJSON struct {
	GroupIdx      int    `json:"group_idx"`
	Kind          string `json:"kv_cache_spec_kind"`
	SlidingWindow *int   `json:"kv_cache_spec_sliding_window"`
}

// debugDrop withholds the next N event batches of every rank (or of
// dp_rank) from the PUB socket: message loss on purpose, repaired by replay.
func (s *Server) debugDrop(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Batches int  `json:"batches"`
		DPRank  *int `json:"dp_rank"`
	}
	if _, err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Batches < 1 {
		writeError(w, badRequest("batches must be at least 1, got %d", req.Batches))
		return
	}
	n := 0
	for _, rank := range s.ranks {
		if rank.Drop == nil || (req.DPRank != nil && *req.DPRank != rank.ID) {
			continue
		}
		rank.Drop(req.Batches)
		n++
	}
	if n == 0 {
		writeError(w, badRequest("no KV event publisher matches (events off, or no such dp_rank)"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": fmt.Sprintf("withholding %d batches on %d publishers", req.Batches, n)})
}

// blockJSON is one entry of the ground-truth dump.
type blockJSON struct {
	Hash     uint64   `json:"hash"`
	HashHex  string   `json:"hash_hex"`
	Parent   *uint64  `json:"parent"`
	TokenIDs []uint32 `json:"token_ids"`
	Medium   string   `json:"medium"`
	DPRank   int      `json:"dp_rank"`
	RefCnt   int      `json:"ref_cnt"`
	// The block's KV-cache group, with the fields vLLM's BlockStored
	// carries for it.
	GroupIdx      int    `json:"group_idx"`
	Kind          string `json:"kv_cache_spec_kind"`
	SlidingWindow *int   `json:"kv_cache_spec_sliding_window"`
}
