package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
)

const adapter = "sql-lora"

func loraCompletion(model, text string) string {
	b, _ := json.Marshal(map[string]any{"model": model, "prompt": text, "max_tokens": 4})
	return string(b)
}

// routerKeys are the block keys the router computes for a completion of
// text naming model (an adapter of sim-model, or sim-model itself).
func routerKeys(t *testing.T, model, lora, text string) []uint64 {
	t.Helper()
	p, _ := prompt.New(map[string]prompt.Source{"sim-model": {Encoder: simencoder.Encoder{}}})
	req, err := openai.Parse(openai.Completion, []byte(loraCompletion(model, text)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.ComputeFor(req, prompt.Target{Model: "sim-model", LoRA: lora, BlockSize: 16})
	if err != nil || len(res.Keys) == 0 {
		t.Fatalf("router keys: %d keys, %v", len(res.Keys), err)
	}
	return res.Keys
}

// TestLoRARouting runs two vllm-sim replicas with KV events through the
// real driver intake, one serving a LoRA adapter: the router learns the
// adapter from the replica's /v1/models, lists it with its parent, sends
// adapter requests only to that replica, and its block keys for an adapter
// prompt are exactly the keys the driver derives from the engine's LoRA
// events, so the prefix hit is predicted in exact mode.
func TestLoRARouting(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f := startFleetWith(t, []string{"--enable-lora", "--lora-modules", adapter + "=/loras/sql"}, nil)
	lora, plain := f.ids[0], f.ids[1]
	r := f.router(t, "router-lora")
	poll.Until(t, "the adapter from the replica's model listing", func() bool {
		reps := r.Replicas().ForModel(adapter)
		return len(reps) == 1 && reps[0].ID == lora
	})

	resp, err := http.Get("http://" + r.Addr() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	for _, m := range list.Data {
		parents[m.ID] = "<null>"
		if m.Parent != nil {
			parents[m.ID] = *m.Parent
		}
	}
	if parents[model] != "<null>" || parents[adapter] != model || len(parents) != 2 {
		t.Errorf("/v1/models: %v; want %s (no parent) and %s (parent %s)", parents, model, adapter, model)
	}

	text := longPrompt(11)
	for i := range 4 {
		a := call(t, r.Addr(), "/v1/completions", loraCompletion(adapter, longPrompt(20+i)))
		if a.code != 200 || a.replica != lora {
			t.Fatalf("adapter request %d: %d on %q (%s); want 200 on %s", i, a.code, a.replica, a.body, lora)
		}
	}
	if a := call(t, r.Addr(), "/v1/completions", loraCompletion(adapter, text)); a.code != 200 || a.replica != lora {
		t.Fatalf("adapter prompt: %d on %q; want 200 on %s", a.code, a.replica, lora)
	}

	// The driver's keys for the engine's LoRA blocks are the router's keys.
	want := routerKeys(t, adapter, adapter, text)
	base := routerKeys(t, model, "", text)
	poll.Until(t, "the adapter prompt's blocks in the driver's state", func() bool {
		held := map[uint64]bool{}
		for _, b := range f.store.Blocks(lora) {
			held[uint64(b.Key)] = true
		}
		for _, k := range want {
			if !held[k] {
				return false
			}
		}
		return true
	})
	for _, b := range f.store.Blocks(lora) {
		if uint64(b.Key) == base[0] {
			t.Errorf("the replica holds the base model's first block; only adapter requests were sent")
		}
	}
	var e explanation
	poll.Until(t, "an exact prediction of the whole prompt", func() bool {
		e = explain(t, r.AdminAddr(), loraCompletion(adapter, text))
		return e.Chosen.Mode == "exact" && e.Chosen.CachedTokens == 16*len(want)
	})
	if e.Chosen.Replica != lora {
		t.Errorf("explained on %s; want %s", e.Chosen.Replica, lora)
	}
	// The base model's request for the same text shares no block with it.
	if eb := explain(t, r.AdminAddr(), loraCompletion(model, text)); eb.Chosen.CachedTokens != 0 {
		t.Errorf("base-model request predicted %d cached tokens from the adapter's blocks", eb.Chosen.CachedTokens)
	}
	a := call(t, r.Addr(), "/v1/completions", loraCompletion(adapter, text))
	if a.replica != lora || a.mode != "exact" || cachedTokens(t, a.body) == 0 {
		t.Errorf("repeat: on %q mode %q, engine cached %d; want %s exact with a hit", a.replica, a.mode, cachedTokens(t, a.body), lora)
	}
	if _, ok := r.Replicas().Get(plain); !ok {
		t.Errorf("the replica without adapters left the set")
	}
}
