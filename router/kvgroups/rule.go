package kvgroups

import (
	"fmt"

	"github.com/llmgw/llmgw/router/index"
)

// The hit rules a hybrid replica's prefix can be scored by. Only
// RuleEngine predicts what the engine will reuse; the other two are what
// routers did before (and do elsewhere), kept so the difference can be
// measured on one fleet (docs/BENCHMARKS.md, "Hybrid KV-cache groups").
const (
	// RuleEngine is vLLM's hybrid coordinator rule over every group (the
	// package doc): the default.
	RuleEngine = "engine"
	// RuleAllFull treats every group as full attention in one index, as
	// llmgw did before it kept groups apart: a block counts as held when
	// any group holds it, and the hit is the run of held blocks from the
	// start. It over-predicts where a sliding window or a Mamba group has
	// dropped what the full-attention group keeps.
	RuleAllFull = "all_full"
	// RuleFullOnly reads the full-attention groups alone and ignores the
	// sliding-window and Mamba groups (Dynamo's choice); a layout without
	// a full-attention group then never hits.
	RuleFullOnly = "full_only"
)

// CheckRule returns an error naming rule when it is not one of the rules
// ("" is RuleEngine).
func CheckRule(rule string) error {
	switch rule {
	case "", RuleEngine, RuleAllFull, RuleFullOnly:
		return nil
	}
	return fmt.Errorf("kv groups rule %q: want %s, %s or %s", rule, RuleEngine, RuleAllFull, RuleFullOnly)
}

// LookupReplicasRule is LookupReplicasMax with hybrid candidates' hits
// computed by rule (RuleEngine, RuleAllFull or RuleFullOnly; anything
// else is RuleEngine). Full-attention candidates are answered as
// index.Models answers them, whatever the rule.
func (x *Index) LookupReplicasRule(model string, keys []uint64, stride, maxBlocks int, rule string, replicas []string, out []index.Match) []index.Match {
	if rule != RuleAllFull && rule != RuleFullOnly {
		return x.LookupReplicasMax(model, keys, stride, maxBlocks, replicas, out)
	}
	out = x.models.LookupReplicas(model, keys, stride, replicas, out)
	limit := min(maxBlocks, len(keys))
	if x.reg.Any() {
		var sc *scratch
		for i, id := range replicas {
			l := x.reg.Of(id)
			if !l.Hybrid() {
				continue
			}
			if sc == nil {
				sc = x.scratch(model, keys, stride, replicas)
				defer x.pool.Put(sc)
			}
			if rule == RuleAllFull {
				out[i] = sc.unionHit(i, l, out[i], limit)
			} else {
				out[i] = sc.fullOnlyHit(i, l, out[i], limit)
			}
		}
	}
	return x.offloaded(out, replicas, limit)
}

// unionHit is RuleAllFull for candidate c of layout l: the run of blocks
// from block 0 that some indexed group holds.
func (sc *scratch) unionHit(c int, l *Layout, base index.Match, maxBlocks int) index.Match {
	hit := 0
	if isFull(l.kindOf(l.primary)) {
		hit = min(base.Blocks, maxBlocks) // the primary group holds these
	}
	for ; hit < maxBlocks; hit++ {
		held := false
		for _, g := range l.Groups {
			if l.Indexed(g.Index) && sc.has(g.Index, l.primary, c, hit) {
				held = true
				break
			}
		}
		if !held {
			break
		}
	}
	return withHit(base, hit)
}

// fullOnlyHit is RuleFullOnly for candidate c of layout l: the shortest
// hit of its indexed full-attention groups, 0 without one.
func (sc *scratch) fullOnlyHit(c int, l *Layout, base index.Match, maxBlocks int) index.Match {
	hit, found := maxBlocks, false
	for _, g := range l.Groups {
		if isFull(g.Kind) && l.Indexed(g.Index) {
			hit, found = min(hit, sc.fullHit(g.Index, l.primary, c, base)), true
		}
	}
	if !found {
		hit = 0
	}
	return withHit(base, hit)
}

// withHit is base with a hit of hit blocks; blocks past the primary
// group's match are counted on the GPU (their tier is not tracked there).
func withHit(base index.Match, hit int) index.Match {
	m := base
	m.Blocks = hit
	if hit > base.Blocks {
		m.GPUBlocks = base.GPUBlocks + hit - base.Blocks
		if base.GPURun == base.Blocks {
			m.GPURun = hit
		}
	} else {
		m.GPUBlocks, m.GPURun = min(base.GPUBlocks, hit), min(base.GPURun, hit)
	}
	return m
}
