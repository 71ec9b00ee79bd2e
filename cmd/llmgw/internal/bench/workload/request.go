package workload

import (
	"encoding/json"
	"time"
)

// Message is one chat turn.
type Message struct {
	Role    string
	Content string
}

// Request is one request of a workload.
type Request struct {
	// ID is the request's position in the workload, in arrival order.
	ID int
	// At is the scheduled arrival, from the start of the run.
	At time.Duration
	// After is the ID of a request that must finish before this one is
	// sent (a chat round waits for the previous round), or -1.
	After int
	// Group labels related requests (a chat user, a prefix group).
	Group string
	// Messages make a chat request; when nil the request is a completion
	// of Prompt, sent without special tokens so its tokens are exactly the
	// prompt's.
	Messages  []Message
	Prompt    string
	MaxTokens int
}

// Workload is a named list of requests in arrival order.
type Workload struct {
	Name     string
	Requests []Request
}

// Path is the OpenAI endpoint the request goes to.
func (r *Request) Path() string {
	if r.Messages != nil {
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

// TokenizeBody is the body of vLLM's /tokenize for this request's prompt
// on model, as the engine builds it for Body: the chat template rendered
// with the generation prompt and encoded without special tokens, or the
// completion prompt encoded without special tokens.
func (r *Request) TokenizeBody(model string) ([]byte, error) {
	body := map[string]any{"model": model, "add_special_tokens": false}
	if r.Messages != nil {
		body["messages"] = r.messages()
		body["add_generation_prompt"] = true
		body["continue_final_message"] = false
	} else {
		body["prompt"] = r.Prompt
	}
	return json.Marshal(body)
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (r *Request) messages() []message {
	msgs := make([]message, len(r.Messages))
	for i, m := range r.Messages {
		msgs[i] = message(m)
	}
	return msgs
}

// Body is the streaming OpenAI request body for model. It asks for usage in
// the last chunk (for cached_tokens) and for exactly MaxTokens tokens.
func (r *Request) Body(model string) ([]byte, error) {
	body := map[string]any{
		"model":          model,
		"max_tokens":     r.MaxTokens,
		"ignore_eos":     true,
		"stream":         true,
		"stream_options": map[string]bool{"include_usage": true},
	}
	if r.Messages != nil {
		body["messages"] = r.messages()
	} else {
		body["prompt"] = r.Prompt
		body["add_special_tokens"] = false
	}
	return json.Marshal(body)
}
