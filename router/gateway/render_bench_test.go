package gateway

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/anthropic"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/responses"
)

// agentTurns is a four-turn coding-agent conversation: a system prompt
// with a file, a tool call and its result, and the model's answers. Each
// API below carries the same turns in its own shape.
func agentTurns() (system string, turns [][2]string) {
	var sb strings.Builder
	sb.WriteString("You are a coding agent. The repository's main file follows.\n")
	for i := range 200 {
		fmt.Fprintf(&sb, "func f%d() int { return %d }\n", i, i*7)
	}
	for i := range 4 {
		turns = append(turns, [2]string{fmt.Sprintf("Step %d: which function returns %d? Explain.", i, i*70), fmt.Sprintf("f%d returns %d, because it multiplies its index by seven.", i*10, i*70)})
	}
	return sb.String(), turns
}

// renderBodies returns one request per API for the agent's fifth turn.
func renderBodies() map[string][]byte {
	system, turns := agentTurns()
	var msgs, items []map[string]any
	chat := []map[string]any{{"role": "system", "content": system}}
	for _, t := range turns {
		msgs = append(msgs, map[string]any{"role": "user", "content": t[0]}, map[string]any{"role": "assistant", "content": t[1]})
		chat = append(chat, map[string]any{"role": "user", "content": t[0]}, map[string]any{"role": "assistant", "content": t[1]})
		items = append(items, map[string]any{"type": "message", "role": "user", "content": t[0]},
			map[string]any{"type": "message", "role": "assistant", "content": []map[string]any{{"type": "output_text", "text": t[1]}}})
	}
	last := "Now write the test."
	msgs = append(msgs, map[string]any{"role": "user", "content": last})
	chat = append(chat, map[string]any{"role": "user", "content": last})
	items = append(items, map[string]any{"type": "message", "role": "user", "content": last})
	enc := func(v map[string]any) []byte { b, _ := json.Marshal(v); return b }
	return map[string][]byte{
		"chat":      enc(map[string]any{"model": "qwen3", "messages": chat, "max_tokens": 64}),
		"messages":  enc(map[string]any{"model": "qwen3", "system": system, "messages": msgs, "max_tokens": 64}),
		"responses": enc(map[string]any{"model": "qwen3", "instructions": system, "input": items, "max_output_tokens": 64}),
	}
}

// chatOf is what the gateway keys a request by: the chat body, converted
// from a Responses or Messages body as the gateway converts it.
func chatOf(api string, body []byte) ([]byte, error) {
	switch api {
	case "messages":
		r, err := anthropic.Parse(body)
		if err != nil {
			return nil, err
		}
		return r.ChatBody()
	case "responses":
		r, err := responses.Parse(body)
		if err != nil {
			return nil, err
		}
		return r.ChatBody()
	}
	return body, nil
}

// BenchmarkRenderByAPI: what keying a request costs in each API, for the
// same five-turn agent prompt on the real Qwen3 tokenizer and chat
// template: the conversion to chat (Responses, Messages), the chat
// request's parse, the template's render, the tokenizer and the block
// keys. The difference to "chat" is what the API's conversion adds.
func BenchmarkRenderByAPI(b *testing.B) {
	dir := os.Getenv("LLMGW_TESTDATA")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "llmgw", "testdata")
	}
	p, errs := prompt.New(map[string]prompt.Source{"qwen3": {Dir: filepath.Join(dir, "models", "qwen3")}})
	if len(errs) > 0 {
		b.Skipf("the Qwen3 test data is absent (make testdata): %v", errs)
	}
	bodies := renderBodies()
	for _, api := range []string{"chat", "responses", "messages"} {
		b.Run(api, func(b *testing.B) {
			var tokens int
			for b.Loop() {
				chat, err := chatOf(api, bodies[api])
				if err != nil {
					b.Fatal(err)
				}
				req, err := openai.Parse(openai.Chat, chat)
				if err != nil {
					b.Fatal(err)
				}
				res, err := p.Compute(req, 16)
				if err != nil || res.Keys == nil {
					b.Fatalf("keys %d, %v", len(res.Keys), err)
				}
				tokens = res.Tokens
			}
			b.ReportMetric(float64(tokens), "prompt-tokens")
		})
	}
}

// TestAPIsRenderTheSamePrompt: the same conversation sent as chat, as a
// Responses request and as a Messages request gives the same prompt
// keys on a real model's template, so its turns hit one cache whichever
// API an agent speaks.
func TestAPIsRenderTheSamePrompt(t *testing.T) {
	dir := os.Getenv("LLMGW_TESTDATA")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "llmgw", "testdata")
	}
	p, errs := prompt.New(map[string]prompt.Source{"qwen3": {Dir: filepath.Join(dir, "models", "qwen3")}})
	if len(errs) > 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("the Qwen3 test data is absent in CI: %v", errs)
		}
		t.Skipf("the Qwen3 test data is absent (make testdata): %v", errs)
	}
	keys := map[string][]string{}
	for api, body := range renderBodies() {
		chat, err := chatOf(api, body)
		if err != nil {
			t.Fatal(err)
		}
		req, err := openai.Parse(openai.Chat, chat)
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Compute(req, 16)
		if err != nil || len(res.Keys) == 0 {
			t.Fatalf("%s: %d keys, %v", api, len(res.Keys), err)
		}
		for _, k := range res.Keys {
			keys[api] = append(keys[api], fmt.Sprint(k))
		}
	}
	for _, api := range []string{"responses", "messages"} {
		if strings.Join(keys[api], ",") != strings.Join(keys["chat"], ",") {
			t.Errorf("%s renders %d keys that differ from chat's %d", api, len(keys[api]), len(keys["chat"]))
		}
	}
}
