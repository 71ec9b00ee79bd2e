package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/intake"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
)

// saltedCompletion is a completion body naming model, with cache_salt set
// when salt is not empty.
func saltedCompletion(model, salt, text string) []byte {
	body := map[string]any{"model": model, "prompt": text, "max_tokens": 1}
	if salt != "" {
		body["cache_salt"] = salt
	}
	b, _ := json.Marshal(body)
	return b
}

// saltedKeys are the block keys router/prompt computes for that request.
func saltedKeys(t *testing.T, body []byte, lora string) []uint64 {
	t.Helper()
	p, _ := prompt.New(map[string]prompt.Source{model: {Encoder: simencoder.Encoder{}}})
	req, err := openai.Parse(openai.Completion, body)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.ComputeFor(req, prompt.Target{Model: model, LoRA: lora, BlockSize: 16})
	if err != nil || len(res.Keys) < 2 {
		t.Fatalf("router keys: %d keys, %v; want a prompt of several blocks", len(res.Keys), err)
	}
	return res.Keys
}

// TestSaltedKeysMatchDriverAndRouter sends salted requests straight to a
// vllm-sim whose KV events go through the driver's real intake and decoder,
// and checks that the keys the driver derives from the engine's BlockStored
// events (cache_salt in block 0's extra_keys, after the LoRA name) are
// exactly the keys the router computes from the request and its salt, for
// the base model and for a LoRA adapter, and that a salt keys every block
// of the chain apart from the unsalted prompt and from another salt.
func TestSaltedKeysMatchDriverAndRouter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a vllm-sim process")
	}
	const replica = "alloc-salt/main"
	store := kvevents.NewStore()
	in, err := intake.Open(intake.Config{Replica: replica}, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	s := startSim(t, "--sim-latency=false", "--kv-events-config", in.EngineFlag(),
		"--enable-lora", "--lora-modules", adapter+"=/loras/sql")
	text := longPrompt(31)
	cases := []struct{ model, lora, salt string }{
		{model, "", "tenant-a"},
		{model, "", "tenant-b"},
		{adapter, adapter, "tenant-a"},
	}
	var want [][]uint64
	for _, c := range cases {
		body := saltedCompletion(c.model, c.salt, text)
		resp, err := http.Post("http://"+s.addr+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s with salt %s: %s: %s", c.model, c.salt, resp.Status, b)
		}
		want = append(want, saltedKeys(t, body, c.lora))
	}
	held := map[uint64]bool{}
	poll.Until(t, "every salted prompt's blocks in the driver's state", func() bool {
		clear(held)
		for _, b := range store.Blocks(replica) {
			held[uint64(b.Key)] = true
		}
		for _, keys := range want {
			for _, k := range keys {
				if !held[k] {
					return false
				}
			}
		}
		return true
	})
	unsalted := saltedKeys(t, saltedCompletion(model, "", text), "")
	for i, k := range unsalted {
		if held[k] {
			t.Errorf("the driver holds the unsalted prompt's block %d; only salted requests were sent", i)
		}
		for c, keys := range want {
			if i < len(keys) && keys[i] == k {
				t.Errorf("%s with salt %s: block %d keyed like the unsalted prompt", cases[c].model, cases[c].salt, i)
			}
		}
	}
	for i := range want[0] {
		if want[0][i] == want[1][i] {
			t.Errorf("block %d: salts tenant-a and tenant-b share a key", i)
		}
	}
	t.Logf("%d blocks held; each salted prompt's %d keys found", len(held), len(want[0]))
}
