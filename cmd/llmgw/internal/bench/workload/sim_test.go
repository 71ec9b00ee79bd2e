package workload

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simtokenizer"
)

// simTokens are r's prompt ids as vllm-sim without a tokenizer file
// computes them for r.TokenizeBody: the tests check the workloads' token
// arithmetic against the simulator's own tokenizer.
func simTokens(r *Request) []uint32 {
	var tok simtokenizer.Tokenizer
	if r.Messages != nil {
		m := make([]simtokenizer.Message, len(r.Messages))
		for i, msg := range r.Messages {
			m[i] = simtokenizer.Message{Role: msg.Role, Content: msg.Content}
		}
		return tok.Encode(simtokenizer.RenderChat(m, true, false), false)
	}
	return tok.Encode(r.Prompt, false)
}

func simTokenLists(w Workload) [][]uint32 {
	out := make([][]uint32, len(w.Requests))
	for i := range w.Requests {
		out[i] = simTokens(&w.Requests[i])
	}
	return out
}

// TestTokenizeBody: the /tokenize body asks for the prompt exactly as the
// request sends it, with vLLM's flags spelled out.
func TestTokenizeBody(t *testing.T) {
	chat := Request{Messages: []Message{{Role: "system", Content: " ab"}, {Role: "user", Content: " cd"}}, MaxTokens: 3}
	done := Request{Prompt: " abc def", MaxTokens: 3}
	for _, tc := range []struct {
		name string
		r    Request
		want map[string]any
	}{
		{"chat", chat, map[string]any{"model": "m", "add_special_tokens": false, "add_generation_prompt": true, "continue_final_message": false,
			"messages": []any{map[string]any{"role": "system", "content": " ab"}, map[string]any{"role": "user", "content": " cd"}}}},
		{"completion", done, map[string]any{"model": "m", "add_special_tokens": false, "prompt": " abc def"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.r.TokenizeBody("m")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tokenize body %v; want %v", got, tc.want)
			}
			sent, _ := tc.r.Body("m")
			var body map[string]any
			_ = json.Unmarshal(sent, &body)
			if !reflect.DeepEqual(body["messages"], got["messages"]) || !reflect.DeepEqual(body["prompt"], got["prompt"]) {
				t.Errorf("tokenize body's prompt differs from the request's: %s vs %s", b, sent)
			}
		})
	}
}
