package prompt

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/cmd/vllm-sim/simtokenizer"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/router/openai"
)

// TestComputeForLoRA: a request naming an adapter is encoded with its base
// model's encoder and keyed from the adapter's root, exactly as
// blockkey.PromptKeys(lora) keys it; approximate keys differ per adapter.
func TestComputeForLoRA(t *testing.T) {
	t.Parallel()
	p, _ := New(map[string]Source{"sim": {Encoder: simencoder.Encoder{}}})
	prompt := strings.Repeat("tell me about block keys ", 30)
	req := parse(t, openai.Completion, `{"model":"sql-lora","prompt":"`+prompt+`"}`)
	got, err := p.ComputeFor(req, Target{Model: "sim", LoRA: "sql-lora", BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	ids := simtokenizer.Tokenizer{}.Encode(prompt, true)
	want := blockkey.PromptKeys(nil, "sql-lora", "", ids, 16)
	if len(want) == 0 || len(got.Keys) != len(want) {
		t.Fatalf("%d keys; want %d (> 0)", len(got.Keys), len(want))
	}
	for i := range want {
		if got.Keys[i] != uint64(want[i]) {
			t.Fatalf("key %d: %x; want %x", i, got.Keys[i], uint64(want[i]))
		}
	}
	base, _ := p.ComputeFor(req, Target{Model: "sim", BlockSize: 16})
	if base.Keys[0] == got.Keys[0] {
		t.Error("the adapter's keys equal the base model's")
	}

	// Without an encoder: approximate keys, one chain per adapter.
	approx := func(lora string) []uint64 {
		r, err := p.ComputeFor(req, Target{Model: "no-tokenizer", LoRA: lora, BlockSize: 16})
		if err != nil || r.Keys != nil || len(r.ApproxKeys) == 0 {
			t.Fatalf("approx %q: keys %v approx %d err %v", lora, r.Keys, len(r.ApproxKeys), err)
		}
		return r.ApproxKeys
	}
	a, b, none := approx("sql-lora"), approx("chat-lora"), approx("")
	if a[0] == b[0] || a[0] == none[0] {
		t.Error("approximate keys do not depend on the adapter")
	}
	if none[0] != TextKeys(nil, prompt)[0] {
		t.Error("base-model approximate keys changed")
	}
}
