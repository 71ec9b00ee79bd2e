package server

import (
	"strings"
	"testing"
)

// TestStreamConverter pins the event text vLLM's message_stream_converter
// (vllm/entrypoints/anthropic/serving.py @ 0001948b) writes for a chat
// stream with reasoning, text and a tool call: pydantic's exclude_unset
// dumps, one "event:" line and one "data:" line each.
func TestStreamConverter(t *testing.T) {
	chunks := []string{
		`{"id":"chatcmpl-1","model":"m","choices":[{"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9}}`,
		`{"id":"chatcmpl-1","model":"m","choices":[{"delta":{"reasoning":"hmm"}}]}`,
		`{"id":"chatcmpl-1","model":"m","choices":[{"delta":{"content":"a<b"}}]}`,
		`{"id":"chatcmpl-1","model":"m","choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":"{\"x\""}}]}}]}`,
		`{"id":"chatcmpl-1","model":"m","choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":": 1}"}}]},"finish_reason":"tool_calls"}]}`,
		`{"id":"chatcmpl-1","model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`,
		`[DONE]`,
	}
	var c streamConverter
	var got strings.Builder
	for _, ch := range chunks {
		got.WriteString(c.convert(ch))
	}
	sig := c.sigSent
	want := `event: message_start
data: {"type":"message_start","message":{"id":"chatcmpl-1","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":0}}}

event: content_block_start
data: {"type":"content_block_start","content_block":{"type":"thinking","thinking":""},"index":0}

event: content_block_delta
data: {"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"hmm"},"index":0}

event: content_block_delta
data: {"type":"content_block_delta","delta":{"type":"signature_delta","signature":"` + sig + `"},"index":0}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","content_block":{"type":"text","text":""},"index":1}

event: content_block_delta
data: {"type":"content_block_delta","delta":{"type":"text_delta","text":"a<b"},"index":1}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","content_block":{"type":"tool_use","id":"call_1","name":"f","input":{}},"index":2}

event: content_block_delta
data: {"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\"x\""},"index":2}

event: content_block_delta
data: {"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":": 1}"},"index":2}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":9,"output_tokens":4}}

event: message_stop
data: {"type":"message_stop"}

`
	if len(sig) != 32 {
		t.Errorf("signature %q; want 32 hex digits (a uuid4 hex)", sig)
	}
	if got.String() != want {
		t.Errorf("events:\n%s\nwant:\n%s", got.String(), want)
	}
}

func TestMessageOf(t *testing.T) {
	content, reason := "hi", "length"
	c := chatAnswer{ID: "chatcmpl-2", Model: "m", Usage: &usage{PromptTokens: 3, CompletionTokens: 2}}
	c.Choices = append(c.Choices, struct {
		Message *chatAnswerMessage `json:"message"`
		Delta   *chatAnswerMessage `json:"delta"`
		Finish  *string            `json:"finish_reason"`
	}{Message: &chatAnswerMessage{Content: &content}, Finish: &reason})
	const want = `{"id":"chatcmpl-2","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"model":"m","stop_reason":"max_tokens","usage":{"input_tokens":3,"output_tokens":2}}`
	if got := string(plainJSON(messageOf(c))); got != want {
		t.Errorf("message:\n got %s\nwant %s", got, want)
	}
}
