// Package oracle computes the best prefix reuse any routing policy could
// achieve on a workload: an infinite cache shared by the whole fleet, where
// every request finds every block of every earlier request's prompt.
//
// It follows vLLM's accounting, which vllm-sim reproduces: only full blocks
// are cached, a block is reusable only when the whole chain before it is,
// and the last prompt token is always recomputed to obtain logits, so a
// prompt of n tokens can reuse at most (n-1)/blockSize blocks; cached_tokens
// is a multiple of the block size.
//
// It imports internal/blockkey only.
package oracle

import "github.com/llmgw/llmgw/internal/blockkey"

// Reusable returns, for each prompt in arrival order, the prompt tokens
// the ideal fleet serves from cache.
func Reusable(prompts [][]uint32, blockSize int) []int {
	if blockSize <= 0 {
		return make([]int, len(prompts))
	}
	seen := map[blockkey.Key]struct{}{}
	out := make([]int, len(prompts))
	var keys []blockkey.Key
	for i, p := range prompts {
		keys = blockkey.PromptKeys(keys[:0], "", "", p, blockSize)
		limit := max(len(p)-1, 0) / blockSize
		hit := 0
		for hit < limit {
			if _, ok := seen[keys[hit]]; !ok {
				break
			}
			hit++
		}
		out[i] = hit * blockSize
		for _, k := range keys {
			seen[k] = struct{}{}
		}
	}
	return out
}
