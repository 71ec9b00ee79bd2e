package kvgroups

import (
	"testing"

	"github.com/llmgw/llmgw/router/index"
)

// Each rule's hit on hand-computed holdings (16-token blocks; a 33-token
// window needs 2 blocks). Under eviction the full-attention group keeps
// blocks 0..5 and the other group some blocks, sometimes past block 5.
func TestRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                      string
		layout                    string
		h                         held
		max                       int
		engine, allFull, fullOnly int
	}{
		// Window holds 4,5 (the 2 blocks ending at 6): the engine hits 6.
		{"window agrees", "full,sliding_window:33", held{0: span(0, 6), 1: {4, 5}}, 10, 6, 6, 6},
		// Window holds only 5: no 2-block run, no run from block 0.
		{"window dropped", "full,sliding_window:33", held{0: span(0, 6), 1: {5}}, 10, 0, 6, 6},
		// The window group still holds 6..7 the full group lost: the union
		// runs on to 8; the engine stops at the full group's 6.
		{"window past full", "full,sliding_window:33", held{0: span(0, 6), 1: {4, 5, 6, 7}}, 10, 6, 8, 6},
		// Mamba state at block 2 (hit 3) only.
		{"mamba earlier", "full,mamba", held{0: span(0, 6), 1: {2}}, 10, 3, 6, 6},
		// Mamba state nowhere within the full hit.
		{"mamba none", "full,mamba", held{0: span(0, 6), 1: {8}}, 10, 0, 6, 6},
		// The cap binds every rule.
		{"cap", "full,mamba", held{0: span(0, 8), 1: {7}}, 5, 0, 5, 5},
		// No full-attention group: full_only never hits.
		{"window alone", "sliding_window:33", held{0: span(0, 4)}, 10, 4, 4, 0},
		// Plain full attention is the same under every rule.
		{"full", "full", held{0: span(0, 6)}, 10, 6, 6, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range []struct {
				rule string
				want int
			}{{RuleEngine, tc.engine}, {"", tc.engine}, {RuleAllFull, tc.allFull}, {RuleFullOnly, tc.fullOnly}} {
				ms, reg := index.NewModels(index.Options{}), NewRegistry()
				x := NewIndex(ms, reg)
				keys := keysOf(10)
				load(t, ms, reg, "r", tc.layout, keys, tc.h)
				max := tc.max
				if tc.layout == "full" {
					max = len(keys) // as the scheduler asks: full replicas are not capped here
				}
				got := x.LookupReplicasRule("m", keys, 1, max, r.rule, []string{"other", "r"}, nil)
				if got[1].Blocks != r.want || got[0].Blocks != 0 {
					t.Errorf("rule %q: hit %d (other %d); want %d", r.rule, got[1].Blocks, got[0].Blocks, r.want)
				}
				if got[1].GPUBlocks != got[1].Blocks {
					t.Errorf("rule %q: %d GPU blocks of %d", r.rule, got[1].GPUBlocks, got[1].Blocks)
				}
			}
		})
	}
}

func TestCheckRule(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", RuleEngine, RuleAllFull, RuleFullOnly} {
		if err := CheckRule(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if err := CheckRule("dynamo"); err == nil {
		t.Error("an unknown rule passed")
	}
}
