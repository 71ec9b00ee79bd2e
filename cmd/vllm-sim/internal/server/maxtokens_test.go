package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCompletionMaxTokens: vLLM's completions take an absent max_tokens as
// 16 and a null one as whatever max_model_len (100 here) leaves after the
// prompt.
func TestCompletionMaxTokens(t *testing.T) {
	s := testServer()
	tests := []struct {
		name      string
		body      string
		promptLen int
		want      int
		wantErr   string
	}{
		{"absent", `{}`, 10, 16, ""},
		{"a number", `{"max_tokens":7}`, 10, 7, ""},
		{"null leaves the context", `{"max_tokens":null}`, 10, 90, ""},
		{"null with a prompt filling the context", `{"max_tokens":null}`, 100, 0, ""},
		{"null with a prompt over the context", `{"max_tokens":null}`, 101, 0, "maximum context length is 100 tokens. However, your request has 101 input tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req completionRequest
			if err := json.Unmarshal([]byte(tt.body), &req); err != nil {
				t.Fatal(err)
			}
			got, err := s.completionMaxTokens(req.MaxTokens, tt.promptLen)
			switch {
			case tt.wantErr != "" && (err == nil || err.status != 400 || !strings.Contains(err.msg, tt.wantErr)):
				t.Errorf("error %+v; want a 400 mentioning %q", err, tt.wantErr)
			case tt.wantErr == "" && (err != nil || got != tt.want):
				t.Errorf("max tokens %d, %+v; want %d", got, err, tt.want)
			}
		})
	}
	var req completionRequest
	if err := json.Unmarshal([]byte(`{"max_tokens":"16"}`), &req); err == nil || !strings.Contains(err.Error(), "max_tokens must be an integer or null") {
		t.Errorf("a string max_tokens: %v; want an error naming the field", err)
	}
}

// FuzzCompletionMaxTokens: any max_tokens value and prompt length gives a
// limit or an error, never a panic, and null never a negative limit.
func FuzzCompletionMaxTokens(f *testing.F) {
	f.Add(`null`, 10)
	f.Add(`16`, 200)
	f.Add(`-3`, 0)
	f.Add(`1e3`, 5)
	s := testServer()
	f.Fuzz(func(t *testing.T, raw string, promptLen int) {
		var req completionRequest
		if json.Unmarshal([]byte(`{"max_tokens":`+raw+`}`), &req) != nil {
			return
		}
		n, err := s.completionMaxTokens(req.MaxTokens, promptLen)
		if err != nil && err.status != 400 {
			t.Fatalf("error status %d", err.status)
		}
		if err == nil && req.MaxTokens.Value == nil && n < 0 {
			t.Fatalf("null max_tokens with a %d-token prompt gave %d", promptLen, n)
		}
	})
}
