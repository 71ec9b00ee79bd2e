package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/kvgroups"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/server"
)

// TestHybridPrediction runs one vllm-sim replica per KV-cache layout with
// a small block pool, its events through the real driver intake and
// forwarder, and a real router. A workload of interleaved multi-turn
// sessions overflows the pool, so blocks are evicted (and, for the
// sliding window, freed as they leave it). Before each request the
// router's index has caught up with the driver's state; the router's
// predicted cached tokens (X-Llmgw-Cached-Tokens) must equal the engine's
// usage.prompt_tokens_details.cached_tokens on at least 99% of requests,
// with the hybrid rule, and with plain full attention as before.
//
// It needs vllm-sim's --sim-kv-cache-groups (the simulator's hybrid
// engine).
func TestHybridPrediction(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	for _, tc := range []struct {
		name   string
		groups string // --sim-kv-cache-groups; "" for the default
	}{
		{"full", ""},
		{"full,sliding_window", "full,sliding_window:64"},
		{"full,mamba", "full,mamba"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--num-gpu-blocks-override", "96", "--max-model-len", "512"}
			if tc.groups != "" {
				args = append(args, "--sim-kv-cache-groups", tc.groups)
			}
			f := startFleetWith(t, args)
			id := f.ids[0]
			r := f.router(t, "router-hybrid-"+strings.ReplaceAll(tc.name, ",", "-"))
			waitExact(t, r, id)

			const sessions, turns = 10, 10
			history := make([]string, sessions)
			exact, total := 0, 0
			known := map[uint64]blockkey.Key{}
			var misses []string
			for turn := range turns {
				for s := range sessions {
					history[s] += turnText(s, turn)
					settle(t, r, f, id, known)
					body := loraCompletion(model, history[s])
					settleFor(t, r, f, id, tc.groups, history[s], body)
					a := call(t, r.Addr(), "/v1/completions", body)
					if a.code != http.StatusOK {
						t.Fatalf("session %d turn %d: %d %s", s, turn, a.code, a.body)
					}
					got := cachedTokens(t, a.body)
					total++
					if a.cached == got {
						exact++
					} else if len(misses) < 10 {
						misses = append(misses, fmt.Sprintf("session %d turn %d: predicted %d, engine %d", s, turn, a.cached, got))
					}
				}
			}
			st := f.store.Stats()
			t.Logf("%s: %d/%d exact predictions; driver saw %d stores, %d removals", tc.name, exact, total, st.Stored, st.Removed)
			if st.Removed == 0 {
				t.Errorf("no block was evicted: the workload does not test eviction")
			}
			if exact*100 < total*99 {
				t.Errorf("%d of %d predictions exact; want at least 99%%; first misses:\n%s", exact, total, strings.Join(misses, "\n"))
			}
			if tc.groups != "" {
				e := explainGroups(t, r.AdminAddr(), completion(history[0], false))
				if len(e) != strings.Count(tc.groups, ",")+1 {
					t.Errorf("explain shows %d groups %+v; want the replica's %s", len(e), e, tc.groups)
				}
			}
		})
	}
}

// turnText is one turn of session s: a user message the session's
// prompt grows by.
func turnText(s, turn int) string {
	var sb strings.Builder
	for i := range 6 {
		fmt.Fprintf(&sb, "s%d_t%d_%d ", s, turn, i)
	}
	return sb.String()
}

// settle waits until the driver's state holds the blocks the engine
// holds, group by group (its /debug/kv/blocks dump, as keys), and the
// router's index holds the driver's primary-group blocks (the other
// groups travel in the same updates), so a prediction reads the engine's
// state as of the last response. known keeps each engine hash's key
// across dumps, for blocks whose parent left the dump first.
func settle(t *testing.T, r *server.Server, f *fleet, id string, known map[uint64]blockkey.Key) {
	t.Helper()
	poll.Until(t, "the driver and the router to catch up with the engine", func() bool {
		if in := f.intakes[id]; in != nil {
			if st := in.Stats()[0].Decode; st.BadEvents > 0 {
				t.Fatalf("the driver's intake dropped %d of %d events as malformed: its state cannot match the engine's", st.BadEvents, st.Events)
			}
		}
		d, err := simproc.ReadDump(context.Background(), f.sims[id].URL)
		if err != nil {
			t.Fatal(err)
		}
		byHash := map[uint64]simproc.Block{}
		for _, b := range d.Blocks {
			byHash[b.Hash] = b
		}
		var resolve func(h uint64, depth int) (blockkey.Key, bool)
		resolve = func(h uint64, depth int) (blockkey.Key, bool) {
			if k, ok := known[h]; ok {
				return k, true
			}
			b, ok := byHash[h]
			if !ok || depth > 4096 {
				return 0, false
			}
			parent := blockkey.Root("")
			if b.Parent != nil {
				if parent, ok = resolve(*b.Parent, depth+1); !ok {
					return 0, false
				}
			}
			k := blockkey.Chain(parent, b.TokenIDs, nil)
			known[h] = k
			return k, true
		}
		// Per group: a group's block the driver missed must not hide behind
		// another group's copy of the same key.
		type held struct {
			group int
			key   blockkey.Key
		}
		engine := map[held]bool{}
		for _, b := range d.Blocks {
			k, ok := resolve(b.Hash, 0)
			if !ok {
				return false
			}
			engine[held{b.GroupIdx, k}] = true
		}
		driver := map[held]bool{}
		primary := 0
		for _, b := range f.store.Blocks(id) {
			driver[held{b.Group, b.Key}] = true
			if b.Group == 0 && b.Tier == kvwire.TierGPU {
				primary++
			}
		}
		return maps.Equal(engine, driver) && adminGPUBlocks(t, r.AdminAddr(), id) == primary
	})
}

// settleFor waits, after settle, until the router predicts for body what
// the engine's rule gives on the driver's state (a kvgroups.Index of its
// own, filled from the driver's store): the router has every update the
// driver sent. It returns that prediction, in tokens.
func settleFor(t *testing.T, r *server.Server, f *fleet, id, groups, text, body string) int {
	t.Helper()
	layout := "full"
	if groups != "" {
		layout = groups
	}
	l, err := kvgroups.ParseLayout(layout, 16)
	if err != nil {
		t.Fatal(err)
	}
	ms, reg := index.NewModels(index.Options{}), kvgroups.NewRegistry()
	reg.FromEvents(id, l.Groups, 16)
	byGroup := map[int][]uint64{}
	for _, b := range f.store.Blocks(id) {
		if b.Tier == kvwire.TierGPU {
			byGroup[b.Group] = append(byGroup[b.Group], uint64(b.Key))
		}
	}
	for g, keys := range byGroup {
		if err := ms.For(kvgroups.IndexName(model, g, l.Primary())).Replace(id, []index.Blocks{{Tier: index.GPU, Keys: keys}}); err != nil {
			t.Fatal(err)
		}
	}
	keys := routerKeys(t, model, "", text)
	tokens := promptTokens(t, text)
	limit := len(keys)
	if l.Hybrid() {
		limit = min(limit, (tokens-1)/16)
	}
	want := kvgroups.NewIndex(ms, reg).LookupReplicasMax(model, keys, 1, limit, []string{id}, nil)[0].Blocks * 16
	poll.Until(t, "the router to predict from the driver's state", func() bool {
		return explain(t, r.AdminAddr(), body).Chosen.CachedTokens == want
	})
	return want
}

// promptTokens is the sim tokenizer's length of a completion's prompt.
func promptTokens(t *testing.T, text string) int {
	t.Helper()
	p, _ := prompt.New(map[string]prompt.Source{"sim-model": {Encoder: simencoder.Encoder{}}})
	req, err := openai.Parse(openai.Completion, []byte(loraCompletion(model, text)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.ComputeFor(req, prompt.Target{Model: "sim-model", BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tokens
}

func adminGPUBlocks(t *testing.T, admin, id string) int {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/admin/replicas")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Replicas []struct {
			ID        string `json:"id"`
			GPUBlocks int    `json:"gpu_blocks"`
		} `json:"replicas"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	for _, rep := range out.Replicas {
		if rep.ID == id {
			return rep.GPUBlocks
		}
	}
	return -1
}

// explainGroups returns the chosen replica's kv_groups from the explain
// API.
func explainGroups(t *testing.T, admin, body string) []map[string]any {
	t.Helper()
	resp, err := http.Post("http://"+admin+"/admin/explain/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Chosen struct {
			KVGroups []map[string]any `json:"kv_groups"`
		} `json:"chosen"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	return e.Chosen.KVGroups
}
