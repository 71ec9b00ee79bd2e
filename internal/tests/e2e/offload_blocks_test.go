package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
)

// TestCPUOffloadLargerBlocks runs a replica whose offloading connector
// keeps blocks of 64 tokens over GPU blocks of 16 (vLLM's
// offloaded_block_size, block_size_factor 4), through the driver's intake
// and forwarder and real Consul. The connector names each offloaded block
// by its last GPU block's hash and sends it at size 64 without tokens;
// the driver maps it to the four GPU blocks it covers. Twelve prompts of eight
// full blocks each leave two offloaded blocks on the CPU tier, and later
// prompts push them out of the 16 GPU blocks; asked again, each is served
// from the CPU tier, and the router's predicted cached tokens equal the
// engine's reported ones on at least 99% of requests.
//
// The prompts fill whole offloaded blocks; TestCPUOffloadPartialBlocks
// covers hits that end inside one.
func TestCPUOffloadLargerBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f := startFleetWith(t, []string{"--num-gpu-blocks-override", "16", "--max-model-len", "256",
		"--sim-cpu-offload-blocks", "64", "--sim-cpu-offload-block-size", "64"})
	id := f.ids[0]
	r := f.router(t, "router-offload")
	poll.Until(t, "the replica from consul", func() bool { return len(r.Replicas().ForModel(model)) == 1 })
	waitExact(t, r, id)

	const prompts = 12
	known := map[uint64]blockkey.Key{}
	for i := range prompts {
		p := offloadPrompt(i)
		if a := call(t, r.Addr(), "/v1/completions", completion(p, false)); a.code != 200 {
			t.Fatalf("warm-up %d: %d %s", i, a.code, a.body)
		}
		settleTiers(t, f, id, known)
	}
	agree, total, fromCPU := 0, 0, 0
	for i := range prompts {
		body := completion(offloadPrompt(i), false)
		keys, tokens := textKeys(t, offloadPrompt(i))
		waitPredicts(t, r, f, id, body, keys, tokens) // the router reads the engine's state as of the last response
		a := call(t, r.Addr(), "/v1/completions", body)
		if a.code != 200 {
			t.Fatalf("prompt %d: %d %s", i, a.code, a.body)
		}
		settleTiers(t, f, id, known)
		reported := cachedTokens(t, a.body)
		total++
		if a.cached == reported {
			agree++
		} else {
			t.Logf("prompt %d (%s): predicted %d cached, engine reported %d", i, a.mode, a.cached, reported)
		}
		if reported >= 64 {
			fromCPU++
		}
	}
	t.Logf("predicted equals reported on %d of %d requests; %d served from the CPU tier", agree, total, fromCPU)
	if agree*100 < 99*total {
		t.Errorf("predicted equals reported on %d of %d requests; want >= 99%%", agree, total)
	}
	if fromCPU != prompts {
		t.Errorf("%d of %d prompts hit the CPU tier; want all (their GPU blocks were evicted)", fromCPU, prompts)
	}
}

// offloadPrompt is prompt i: about 135 tokens, eight full blocks of 16.
func offloadPrompt(i int) string {
	var sb strings.Builder
	for j := range 45 {
		fmt.Fprintf(&sb, "w%d_%d ", 800+i, j)
	}
	return sb.String()
}

// textKeys is the block keys and length of a text completion prompt, as
// the router keys it with the sim's tokenizer.
func textKeys(t *testing.T, text string) ([]uint64, int) {
	t.Helper()
	p, _ := prompt.New(map[string]prompt.Source{model: {Encoder: simencoder.Encoder{}}})
	req, err := openai.Parse(openai.Completion, []byte(completion(text, false)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.ComputeFor(req, prompt.Target{Model: model, BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	return res.Keys, res.Tokens
}
