package engine

import (
	"slices"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
)

// TestPoolingRequestPrefillsOnly: a pooling request ends when its prompt
// is computed, with one final token and no output, its full blocks
// cached (BlockStored published) and hit by the next request with the
// same prompt, as vLLM runs pooling requests through the KV cache.
func TestPoolingRequestPrefillsOnly(t *testing.T) {
	h := start(t, Config{MaxNumSeqs: 4}, 64)
	p := prompt(10, 300)
	for i, wantCached := range []int{0, 8} {
		r := request(t.Context(), p)
		r.Pool = true
		if err := h.e.Submit(r); err != nil {
			t.Fatal(err)
		}
		toks := collect(t, r)
		if len(toks) != 1 || toks[0].FinishReason != "stop" || toks[0].CachedTokens != wantCached {
			t.Errorf("run %d: tokens %+v; want one final stop token with %d cached", i, toks, wantCached)
		}
	}
	h.settle(t)
	if got := h.pub.kinds(); !slices.Contains(got, string(kvcache.BlockStored)) {
		t.Errorf("events %v; want the prompt's blocks stored", got)
	}
	var inUse int
	if err := h.e.Do(t.Context(), func(pool *kvcache.Pool) {
		for _, b := range pool.Blocks() {
			inUse += b.RefCnt
		}
	}); err != nil {
		t.Fatal(err)
	}
	if inUse != 0 {
		t.Errorf("%d block references held after the requests ended; want none", inUse)
	}
}
