package anthropic

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

func TestUsage(t *testing.T) {
	tests := []struct {
		name                  string
		data                  string
		input, output, cached int64
		ok                    bool
	}{
		{"full answer (vLLM)", `{"id":"chatcmpl-1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":"end_turn","usage":{"input_tokens":12,"output_tokens":5}}`, 12, 5, 0, true},
		{"message_start", `{"type":"message_start","message":{"id":"x","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":0}}}`, 30, 0, 0, true},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"input_tokens":30,"output_tokens":16}}`, 30, 16, 0, true},
		{"cache reads and writes count in the prompt", `{"type":"message_delta","usage":{"input_tokens":10,"output_tokens":10,"cache_read_input_tokens":80,"cache_creation_input_tokens":10}}`, 100, 10, 80, true},
		{"content_block_delta", `{"type":"content_block_delta","delta":{"type":"text_delta","text":"hi"},"index":0}`, 0, 0, 0, false},
		{"message_stop", `{"type":"message_stop"}`, 0, 0, 0, false},
		{"error", `{"type":"error","error":{"type":"internal_error","message":"x"}}`, 0, 0, 0, false},
		{"not JSON", `[DONE]`, 0, 0, 0, false},
		{"usage of the wrong type", `{"usage":{"input_tokens":"3"}}`, 0, 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, out, cached, ok := Usage([]byte(tc.data))
			if in != tc.input || out != tc.output || cached != tc.cached || ok != tc.ok {
				t.Errorf("Usage = %d, %d, %d, %v; want %d, %d, %d, %v", in, out, cached, ok, tc.input, tc.output, tc.cached, tc.ok)
			}
		})
	}
}

func TestErrorType(t *testing.T) {
	for status, want := range map[int]string{
		400: "invalid_request_error", 422: "invalid_request_error", 401: "authentication_error",
		402: "billing_error", 403: "permission_error", 404: "not_found_error", 413: "request_too_large",
		429: "rate_limit_error", 500: "api_error", 502: "api_error", 503: "overloaded_error",
		504: "timeout_error", 529: "overloaded_error",
	} {
		if got := ErrorType(status); got != want {
			t.Errorf("ErrorType(%d) = %q, want %q", status, got, want)
		}
	}
}

func TestWriteError(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Length", "99")
	WriteError(rec, 429, "slow down <now>")
	if rec.Code != 429 || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Content-Length") != "" {
		t.Errorf("status %d, headers %v", rec.Code, rec.Header())
	}
	const want = `{"type":"error","error":{"type":"rate_limit_error","message":"slow down <now>"}}`
	if rec.Body.String() != want {
		t.Errorf("body %s, want %s", rec.Body, want)
	}
	var v struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(ErrorBody(404, "no"), &v); err != nil || v.Type != "error" || v.Error.Type != "not_found_error" || v.Error.Message != "no" {
		t.Errorf("ErrorBody(404) = %+v, %v", v, err)
	}
}
