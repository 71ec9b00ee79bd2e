package scheduler

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/kvgroups"
)

// The prefix scorer's kv_groups_rule picks the hit rule for hybrid
// replicas: on a sliding-window replica whose window group lost block 5
// (the 33-token window needs blocks 4 and 5), the engine's rule predicts
// no hit, the other two the full-attention group's 6 blocks; a
// full-attention replica is predicted the same under every rule.
func TestPrefixKVGroupsRule(t *testing.T) {
	ms, reg := index.NewModels(index.Options{}), kvgroups.NewRegistry()
	l, _ := kvgroups.ParseLayout("full,sliding_window:33", 16)
	reg.FromEvents("hybrid", l.Groups, 16)
	keys := make([]uint64, 10)
	for i := range keys {
		keys[i] = uint64(700 + i)
	}
	put := func(name, replica string, ks []uint64) {
		if err := ms.For(name).Replace(replica, []index.Blocks{{Tier: index.GPU, Keys: ks}}); err != nil {
			t.Fatal(err)
		}
	}
	put("m", "hybrid", keys[:6])
	put(kvgroups.IndexName("m", 1, 0), "hybrid", keys[4:5])
	put("m", "full", keys[:6])
	ix := kvgroups.NewIndex(ms, reg)
	for _, tc := range []struct {
		rule         string
		hybrid, full int
	}{{"", 0, 6}, {RuleEngine, 0, 6}, {RuleAllFull, 6, 6}, {RuleFullOnly, 6, 6}} {
		p := defaultPrefixParams()
		if tc.rule != "" {
			raw, _ := json.Marshal(map[string]string{"kv_groups_rule": tc.rule})
			if err := DecodeParams(raw, &p); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.validate(); err != nil {
			t.Fatal(err)
		}
		s := newPrefixScorer(TypedName{Type: "prefix", Name: "prefix"}, p, ix, time.Now)
		cands := []Candidate{{ID: "hybrid", Mode: ModeExact}, {ID: "full", Mode: ModeExact}}
		req := &Request{Model: "m", Keys: keys, BlockTokens: 16, PromptTokens: 10*16 + 3}
		req.resetCycle(2)
		s.Score(context.Background(), req, cands, make([]float64, 2))
		if got, _, _ := req.predicted(0); got != tc.hybrid {
			t.Errorf("rule %q: hybrid replica predicted %d blocks; want %d", tc.rule, got, tc.hybrid)
		}
		if got, _, _ := req.predicted(1); got != tc.full {
			t.Errorf("rule %q: full replica predicted %d blocks; want %d", tc.rule, got, tc.full)
		}
	}
	bad := defaultPrefixParams()
	bad.KVGroupsRule = "dynamo"
	if err := bad.validate(); err == nil {
		t.Error("kv_groups_rule \"dynamo\" passed validation")
	}
}

var _ RuleIndex = (*kvgroups.Index)(nil)
