package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/kvgroups"
	"github.com/llmgw/llmgw/router/server"
)

// TestCPUOffloadPartialBlocks is TestCPUOffloadLargerBlocks with prompts
// whose cached prefix does not end on an offloaded block, where the
// connector's whole-block rule decides (get_num_new_matched_tokens): the
// router must predict what it loads, not every block the CPU tier holds.
//
// For k = 1..7, prompt A of 8 full blocks (two offloaded blocks of 4) is
// served, two fillers push it out of the 16 GPU blocks, and prompt B,
// sharing A's first k blocks, is served: it loads offloaded block 0 when
// k >= 4 and nothing otherwise (its CPU-tier run is not a whole block).
// A is asked again with its first k blocks on the GPU (B's) and all 8 in
// the CPU tier: the connector starts at offloaded block k/4 and loads
// nothing when that adds less than one whole block (k = 5, 6, 7).
func TestCPUOffloadPartialBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f := startFleetWith(t, []string{"--num-gpu-blocks-override", "16", "--max-model-len", "256",
		"--sim-cpu-offload-blocks", "128", "--sim-cpu-offload-block-size", "64"})
	id := f.ids[0]
	// The CPU tier holds up to 7 × 32 GPU blocks' keys (A, two fillers
	// and B per k), past the index's default room for an unadvertised
	// CPU tier (index_cpu_ratio 8 × 16 GPU blocks).
	r := f.routerWith(t, "router-offload-partial", func(c *config.Config) { c.Index.CPURatio = 32 })
	poll.Until(t, "the replica from consul", func() bool { return len(r.Replicas().ForModel(model)) == 1 })
	waitExact(t, r, id)
	known := map[uint64]blockkey.Key{}
	serve := func(what string, ids []uint32) answer {
		t.Helper()
		body := idCompletion(ids)
		waitPredicts(t, r, f, id, body, idKeys(ids), len(ids))
		a := call(t, r.Addr(), "/v1/completions", body)
		if a.code != 200 {
			t.Fatalf("%s: %d %s", what, a.code, a.body)
		}
		settleTiers(t, f, id, known)
		return a
	}

	agree, total, partial := 0, 0, 0
	check := func(what string, a answer) int {
		reported := cachedTokens(t, a.body)
		total++
		if a.cached == reported {
			agree++
		} else {
			t.Logf("%s: predicted %d cached, engine reported %d", what, a.cached, reported)
		}
		return reported
	}
	for k := 1; k <= 7; k++ {
		base := uint32(10000 * k)
		a := idPrompt(base, 135) // 8 full blocks of 16 and 7 tokens
		serve("A", a)
		serve("filler 1", idPrompt(base+1000, 135))
		serve("filler 2", idPrompt(base+2000, 135))
		b := append(append([]uint32(nil), a[:16*k]...), idPrompt(base+3000, 135-16*k)...)
		check("B", serve("B", b))
		if got := check("A again", serve("A again", a)); got%64 != 0 {
			partial++ // the GPU hit ends inside an offloaded block and the rule kept it there
		}
	}
	t.Logf("predicted equals reported on %d of %d requests; %d hits end inside an offloaded block", agree, total, partial)
	if agree*100 < 99*total {
		t.Errorf("predicted equals reported on %d of %d requests; want >= 99%%", agree, total)
	}
	if partial == 0 {
		t.Error("no hit ended inside an offloaded block: the test does not exercise the whole-block rule")
	}
}

// idPrompt is n token ids from first on.
func idPrompt(first uint32, n int) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = first + uint32(i)
	}
	return ids
}

// idCompletion is a completion request whose prompt is token ids.
func idCompletion(ids []uint32) string {
	b, _ := json.Marshal(map[string]any{"model": model, "prompt": ids, "max_tokens": 4})
	return string(b)
}

// settleTiers waits until the driver holds the engine's GPU blocks (its
// /debug/kv/blocks dump, as keys) and every offloaded block the engine
// holds (named by its last GPU block, whose key an earlier dump gave).
// The sim sends a step's offloaded stores in the batch of its GPU stores,
// and the tests that use it never fill the CPU tier, so the driver's CPU
// tier can lag the engine's but never run ahead of it.
func settleTiers(t *testing.T, f *fleet, id string, known map[uint64]blockkey.Key) {
	t.Helper()
	poll.Until(t, "the driver to catch up with the engine", func() bool {
		d, err := simproc.ReadDump(context.Background(), f.sims[id].URL)
		if err != nil {
			t.Fatal(err)
		}
		byHash := map[uint64]simproc.Block{}
		for _, b := range d.Blocks {
			if b.Medium == "GPU" {
				byHash[b.Hash] = b
			}
		}
		engineGPU := map[blockkey.Key]bool{}
		var engineCPU []uint64 // the offloaded blocks' names
		for _, b := range d.Blocks {
			if b.Medium != "GPU" {
				engineCPU = append(engineCPU, b.Hash)
				continue
			}
			k, ok := resolveKey(b.Hash, byHash, known)
			if !ok {
				return false
			}
			engineGPU[k] = true
		}
		driverGPU, driverCPU := map[blockkey.Key]bool{}, map[blockkey.Key]bool{}
		for _, b := range f.store.Blocks(id) {
			if b.Tier == kvwire.TierGPU {
				driverGPU[b.Key] = true
			} else {
				driverCPU[b.Key] = true
			}
		}
		if !maps.Equal(engineGPU, driverGPU) {
			return false
		}
		for _, h := range engineCPU {
			if k, ok := known[h]; !ok || !driverCPU[k] {
				return false
			}
		}
		return true
	})
}

// waitPredicts waits, after settleTiers, until the router predicts for
// body (a completion whose prompt has block keys keys and is tokens long)
// what the engine's rule gives on the driver's state: a kvgroups.Index of
// the test's own, filled from the driver's store, with the offloaded
// block size the driver learnt. The router has then applied every update
// the prediction depends on; its block counts per tier could agree with
// the driver's while it still lacked the last update (as many blocks left
// the GPU as came in).
func waitPredicts(t *testing.T, r *server.Server, f *fleet, id, body string, keys []uint64, tokens int) {
	t.Helper()
	ms, reg := index.NewModels(index.Options{}), kvgroups.NewRegistry()
	reg.SetOffload(id, 16, f.store.OffloadBlockSize(id))
	var tiers [2][]uint64
	for _, b := range f.store.Blocks(id) {
		if b.Tier == kvwire.TierGPU {
			tiers[0] = append(tiers[0], uint64(b.Key))
		} else {
			tiers[1] = append(tiers[1], uint64(b.Key))
		}
	}
	if err := ms.For(model).Replace(id, []index.Blocks{{Tier: index.GPU, Keys: tiers[0]}, {Tier: index.CPU, Keys: tiers[1]}}); err != nil {
		t.Fatal(err)
	}
	limit := min(len(keys), (tokens-1)/16)
	want := kvgroups.NewIndex(ms, reg).LookupReplicasMax(model, keys, 1, limit, []string{id}, nil)[0].Blocks * 16
	poll.Until(t, "the router to predict from the driver's state", func() bool {
		return explain(t, r.AdminAddr(), body).Chosen.CachedTokens == want
	})
}

// idKeys is the block keys of a prompt of token ids.
func idKeys(ids []uint32) []uint64 {
	var out []uint64
	for _, k := range blockkey.Keys(nil, blockkey.Root(""), ids, 16) {
		out = append(out, uint64(k))
	}
	return out
}

// resolveKey is the canonical key of the GPU block engine hash h, through
// its parents; known keeps keys across dumps, for blocks whose parent
// left the GPU first.
func resolveKey(h uint64, byHash map[uint64]simproc.Block, known map[uint64]blockkey.Key) (blockkey.Key, bool) {
	if k, ok := known[h]; ok {
		return k, true
	}
	b, ok := byHash[h]
	if !ok {
		return 0, false
	}
	parent := blockkey.Root("")
	if b.Parent != nil {
		if parent, ok = resolveKey(*b.Parent, byHash, known); !ok {
			return 0, false
		}
	}
	k := blockkey.Chain(parent, b.TokenIDs, nil)
	known[h] = k
	return k, true
}
