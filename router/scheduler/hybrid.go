package scheduler

import "github.com/llmgw/llmgw/router/index"

// HybridIndex is a PrefixIndex that computes a replica's hit with the
// engine's rule over all of the replica's KV-cache groups (full
// attention, sliding window, Mamba: router/kvgroups.Index). The prefix
// scorer uses it when Deps.Index is one; the speculative credit and the
// approximate scorer then follow the same rule.
type HybridIndex interface {
	PrefixIndex
	// LookupReplicasMax is LookupReplicas with the hits of hybrid replicas
	// capped at maxBlocks (the engine looks for at most the prompt less one
	// token).
	LookupReplicasMax(model string, keys []uint64, stride, maxBlocks int, replicas []string, out []index.Match) []index.Match
	// EndStateOnly reports whether replica keeps a group whose state exists
	// only where a computed prompt ended (Mamba): a prompt sent there is
	// then a hit for a later one only up to a point where a sent prompt
	// ended, not at every shared block.
	EndStateOnly(replica string) bool
}

// maxHit is the longest hit the engine looks for on req: its prompt less
// one token, in whole blocks (vLLM's max_cache_hit_length), and never past
// the keys.
func maxHit(req *Request) int {
	n := len(req.HistoryKeys())
	if req.PromptTokens > 0 && req.BlockTokens > 0 {
		n = min(n, (req.PromptTokens-1)/req.BlockTokens)
	}
	return max(n, 0)
}

// endMark is the history key noting that a prompt whose last block key is
// k was sent: a Mamba group holds its state there. The mix keeps it apart
// from every block key.
func endMark(k uint64) uint64 { return (k ^ 0x9e3779b97f4a7c15) * 0xbf58476d1ce4e5b9 }

// endStateCredit is what routing history credits an end-state replica for
// a prompt matched depth blocks deep: the depth only where a prompt sent
// there ended (and within the engine's limit), else nothing.
func endStateCredit(h *History, keys []uint64, replica string, depth, limit int) int {
	depth = min(depth, limit)
	for d := depth; d > 0; d-- {
		found := false
		h.Match([]uint64{endMark(keys[d-1])}, func(r string, n int) { found = found || r == replica && n > 0 })
		if found {
			return d
		}
		if depth-d >= maxEndProbe {
			break
		}
	}
	return 0
}

// maxEndProbe bounds the earlier block ends endStateCredit looks at.
const maxEndProbe = 64

// recordEnd notes the end of keys as sent to replica.
func recordEnd(h *History, keys []uint64, replica string) {
	if len(keys) > 0 {
		h.Record([]uint64{endMark(keys[len(keys)-1])}, replica)
	}
}

// The prefix scorer's kv_groups_rule values (router/kvgroups names the
// same rules).
const (
	RuleEngine   = "engine"
	RuleAllFull  = "all_full"
	RuleFullOnly = "full_only"
)

// RuleIndex is a HybridIndex that can also compute a hybrid replica's hit
// by another rule than the engine's (router/kvgroups.Index), so that the
// rules can be compared on one fleet.
type RuleIndex interface {
	// LookupReplicasRule is LookupReplicasMax with hybrid replicas' hits
	// computed by rule (RuleEngine, RuleAllFull or RuleFullOnly).
	LookupReplicasRule(model string, keys []uint64, stride, maxBlocks int, rule string, replicas []string, out []index.Match) []index.Match
}
