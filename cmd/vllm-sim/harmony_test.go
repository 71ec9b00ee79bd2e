package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/gptoss"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
)

// TestGptOssKeysMatchEngine runs the simulator as a gpt-oss engine (the
// test data's gpt-oss tokenizer with a config.json naming gpt_oss, and a
// pinned VLLM_SYSTEM_START_DATE) and checks that the router keys a chat
// request, system message, reasoning_effort, tools and a tool round trip
// included, with the prompt ids the engine renders: the chat request fills
// the engine's prefix cache, and the router's ids sent back as a token
// prompt hit it in every block vLLM can reuse. vLLM's /tokenize renders
// messages with the chat template instead, which this model lacks in the
// test data: the simulator refuses, as vLLM would.
func TestGptOssKeysMatchEngine(t *testing.T) {
	dir := gptoss.ModelDir(t)
	const date = "2026-02-03"
	p := startSim(t, []string{"VLLM_SYSTEM_START_DATE=" + date}, "--tokenizer", dir, "--block-size", "16", "--enable-prompt-tokens-details")

	body := `{"model":"sim-model","reasoning_effort":"high","max_tokens":1,
		"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],
		"messages":[{"role":"system","content":"Answer briefly."},{"role":"user","content":"Weather in Oslo?"},
		{"role":"assistant","reasoning":"Use the tool.","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"-3C and snow"}]}`
	var chat usageOnly
	if st := post(t, p.URL+"/v1/chat/completions", body, &chat); st != http.StatusOK {
		t.Fatalf("chat: status %d\n%s", st, p.Output())
	}

	h, err := prompt.LoadHF(dir)
	if err != nil {
		t.Fatal(err)
	}
	h.PinStartDate(date)
	req, err := openai.Parse(openai.Chat, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	text, err := h.RenderChat(req)
	if err != nil {
		t.Fatal(err)
	}
	ids := h.Encode(text, false)
	router, _ := prompt.New(map[string]prompt.Source{"sim-model": {Encoder: h}})
	res, err := router.Compute(req, 16)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens != len(ids) || len(res.Keys) != len(ids)/16 {
		t.Fatalf("router keyed %d tokens in %d blocks; its ids are %d", res.Tokens, len(res.Keys), len(ids))
	}
	if chat.Usage.PromptTokens != len(ids) {
		t.Fatalf("engine prompt has %d tokens; the router's %d", chat.Usage.PromptTokens, len(ids))
	}
	var again usageOnly
	if st := post(t, p.URL+"/v1/completions", map[string]any{"model": "sim-model", "prompt": ids, "max_tokens": 1}, &again); st != http.StatusOK {
		t.Fatalf("completion: status %d", st)
	}
	// vLLM reuses whole blocks and always computes the prompt's last token.
	if want := (len(ids) - 1) / 16 * 16; again.Usage.PromptTokensDetails.CachedTokens != want {
		t.Errorf("the router's ids hit %d cached tokens; want %d of %d", again.Usage.PromptTokensDetails.CachedTokens, want, len(ids))
	}

	var tok json.RawMessage
	if st := post(t, p.URL+"/tokenize", map[string]any{"model": "sim-model", "messages": []map[string]string{{"role": "user", "content": "Hi"}}}, &tok); st != http.StatusBadRequest {
		t.Errorf("/tokenize with messages on a model without a chat template: status %d (%s); want 400", st, tok)
	}
}

// usageOnly is a response's usage with its cached tokens.
type usageOnly struct {
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}
