package replicas

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/scheduler"
)

// sized sends driver d's snapshot of replicas at the engine block sizes
// given (0: a driver that reports none).
func (f *fixture) sized(epoch uint64, sizes map[string]int) {
	u := &kvwire.Update{Driver: "d", Epoch: epoch, Snapshot: true}
	for id, bs := range sizes {
		u.Replicas = append(u.Replicas, kvwire.Replica{ID: id, BlockSize: bs, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: []uint64{42}}}})
	}
	f.sink.ApplyUpdate(u)
}

// TestEngineBlockSizeDecides: a replica's keys are cut at its engine's
// block size (events before metrics before meta); a model is keyed at the
// size most of its exact replicas share, and one at another size routes
// approx with the reason, never exact with keys that cannot match. Any
// size vLLM produces is taken: 64 (FlashMLA), 272 (a hybrid model's
// attention block raised to its Mamba page).
func TestEngineBlockSizeDecides(t *testing.T) {
	type want struct {
		eff, engine int
		source      string
		mismatch    bool
		mode        scheduler.Mode
		reason      bool
	}
	cases := []struct {
		name    string
		meta    map[string]int // advertised; 0: none (16)
		events  map[string]int // driver snapshot: engine sizes
		scraped map[string]int // vllm:cache_config_info block_size
		key     int
		want    map[string]want
	}{
		{"meta says 16, engine 64", map[string]int{"a/1": 16}, map[string]int{"a/1": 64}, nil, 64,
			map[string]want{"a/1": {64, 64, SizeFromEvents, true, scheduler.ModeExact, false}}},
		{"non-power-of-two hybrid size", map[string]int{"a/1": 0}, map[string]int{"a/1": 272}, nil, 272,
			map[string]want{"a/1": {272, 272, SizeFromEvents, true, scheduler.ModeExact, false}}},
		{"agreeing sizes", map[string]int{"a/1": 64}, map[string]int{"a/1": 64}, nil, 64,
			map[string]want{"a/1": {64, 64, SizeFromEvents, false, scheduler.ModeExact, false}}},
		{"metrics before events", map[string]int{"a/1": 16}, nil, map[string]int{"a/1": 64}, 64,
			map[string]want{"a/1": {64, 64, SizeFromMetrics, true, scheduler.ModeApprox, false}}},
		{"events over metrics", map[string]int{"a/1": 16}, map[string]int{"a/1": 32}, map[string]int{"a/1": 64}, 32,
			map[string]want{"a/1": {32, 32, SizeFromEvents, true, scheduler.ModeExact, false}}},
		{"older driver without a size: metrics", map[string]int{"a/1": 16}, map[string]int{"a/1": 0}, map[string]int{"a/1": 64}, 64,
			map[string]want{"a/1": {64, 64, SizeFromMetrics, true, scheduler.ModeExact, false}}},
		{"mixed model: the majority keys, the other is approx", map[string]int{"a/1": 16, "b/1": 16, "c/1": 16},
			map[string]int{"a/1": 16, "b/1": 64, "c/1": 64}, nil, 64,
			map[string]want{
				"a/1": {16, 16, SizeFromEvents, false, scheduler.ModeApprox, true},
				"b/1": {64, 64, SizeFromEvents, true, scheduler.ModeExact, false},
				"c/1": {64, 64, SizeFromEvents, true, scheduler.ModeExact, false},
			}},
		{"mixed tie: the first by id keys", map[string]int{"a/1": 16, "b/1": 16}, map[string]int{"a/1": 64, "b/1": 16}, nil, 64,
			map[string]want{
				"a/1": {64, 64, SizeFromEvents, true, scheduler.ModeExact, false},
				"b/1": {16, 16, SizeFromEvents, false, scheduler.ModeApprox, true},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture()
			var list []Replica
			for id, bs := range c.meta {
				list = append(list, Replica{ID: id, Model: "m", Address: id, BlockSize: bs})
			}
			f.set.Replace(list)
			for id, bs := range c.scraped {
				f.set.NoteScrapedBlockSize(id, bs)
			}
			if c.events != nil {
				f.sized(1, c.events)
			}
			if got := f.set.KeyBlockSize("m"); got != c.key {
				t.Errorf("KeyBlockSize = %d; want %d", got, c.key)
			}
			modes := map[string]scheduler.Mode{}
			for _, cand := range f.set.Candidates("m") {
				modes[cand.ID] = cand.Mode
			}
			for id, w := range c.want {
				b := f.set.BlockSizes(id)
				if b.Effective() != w.eff || b.Engine != w.engine || b.Source != w.source || (b.Mismatch() != "") != w.mismatch {
					t.Errorf("%s: BlockSizes %+v effective %d mismatch %q; want effective %d engine %d from %q, mismatch %v", id, b, b.Effective(), b.Mismatch(), w.eff, w.engine, w.source, w.mismatch)
				}
				if got := f.set.Mode(id); got != w.mode || modes[id] != w.mode {
					t.Errorf("%s: Mode %s, candidate mode %s; want %s", id, got, modes[id], w.mode)
				}
				if why := f.set.ModeReason(id); (why != "") != w.reason || w.reason && !strings.Contains(why, "block size") {
					t.Errorf("%s: ModeReason %q; want a block size reason: %v", id, why, w.reason)
				}
			}
		})
	}
}

// TestBlockSizeChangeRederivesModes: the candidates' modes are cached per
// synced generation; an engine that comes back at another size (a
// rollout) changes its model's key size and its peers' modes at once.
func TestBlockSizeChangeRederivesModes(t *testing.T) {
	f := newFixture()
	f.set.Replace([]Replica{{ID: "a/1", Model: "m", BlockSize: 16}, {ID: "b/1", Model: "m", BlockSize: 16}, {ID: "c/1", Model: "m", BlockSize: 16}})
	f.sized(1, map[string]int{"a/1": 16, "b/1": 16, "c/1": 64})
	modes := func() map[string]scheduler.Mode {
		out := map[string]scheduler.Mode{}
		for _, c := range f.set.Candidates("m") {
			out[c.ID] = c.Mode
		}
		return out
	}
	if m := modes(); m["a/1"] != scheduler.ModeExact || m["c/1"] != scheduler.ModeApprox {
		t.Fatalf("before: modes %v; want a/1 exact, c/1 approx", m)
	}
	f.sized(2, map[string]int{"a/1": 64, "b/1": 64, "c/1": 64})
	if m := modes(); m["a/1"] != scheduler.ModeExact || m["c/1"] != scheduler.ModeExact || f.set.KeyBlockSize("m") != 64 {
		t.Errorf("after the rollout: modes %v, key size %d; want all exact at 64", m, f.set.KeyBlockSize("m"))
	}
}
