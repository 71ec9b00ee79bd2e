package main

import (
	"strings"
	"testing"
)

// TestCompletionsMaxTokensNull: on /v1/completions an absent max_tokens is
// 16, as in vLLM, and a null one no limit but the context: the completion
// runs to max_model_len (64 here) less the prompt, finishing by length.
func TestCompletionsMaxTokensNull(t *testing.T) {
	p := startSim(t, nil, "--max-model-len", "64")
	tests := []struct {
		name   string
		body   string
		status int
		want   func(prompt int) int // completion tokens for a prompt of that many
		errMsg string
	}{
		{"absent", `{"model":"sim-model","prompt":"a b c","ignore_eos":true}`, 200, func(int) int { return 16 }, ""},
		{"null", `{"model":"sim-model","prompt":"a b c","max_tokens":null,"ignore_eos":true}`, 200, func(n int) int { return 64 - n }, ""},
		{"a number", `{"model":"sim-model","prompt":"a b c","max_tokens":5,"ignore_eos":true}`, 200, func(int) int { return 5 }, ""},
		{"null with a prompt over the context", `{"model":"sim-model","prompt":` + quote(words(0, 100)) + `,"max_tokens":null}`, 400, nil,
			"maximum context length is 64 tokens. However, your request has"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c completion
			st := post(t, p.URL+"/v1/completions", tt.body, &c)
			if st != tt.status {
				t.Fatalf("status %d (%+v); want %d", st, c.Error, tt.status)
			}
			if tt.status != 200 {
				if c.Error == nil || !strings.Contains(c.Error.Message, tt.errMsg) {
					t.Errorf("error %+v; want one mentioning %q", c.Error, tt.errMsg)
				}
				return
			}
			want := tt.want(c.Usage.PromptTokens)
			if c.Usage.CompletionTokens != want || len(c.Choices) != 1 || c.Choices[0].FinishReason != "length" {
				t.Errorf("%d completion tokens for a %d-token prompt, choices %+v; want %d finishing by length",
					c.Usage.CompletionTokens, c.Usage.PromptTokens, c.Choices, want)
			}
		})
	}
}
