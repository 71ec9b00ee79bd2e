package workload

import (
	"encoding/json"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simtokenizer"
)

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
	Messages  []simtokenizer.Message
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

// Tokens are the prompt's token ids exactly as vllm-sim without a tokenizer
// file computes them: the chat template rendered with the generation
// prompt and encoded without special tokens, or the completion prompt
// encoded without special tokens.
func (r *Request) Tokens() []uint32 {
	var tok simtokenizer.Tokenizer
	if r.Messages != nil {
		return tok.Encode(simtokenizer.RenderChat(r.Messages, true, false), false)
	}
	return tok.Encode(r.Prompt, false)
}

// Body is the streaming OpenAI request body for model. It asks for usage in
// the last chunk (for cached_tokens) and for exactly MaxTokens tokens.
func (r *Request) Body(model string) ([]byte, error) {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	body := map[string]any{
		"model":          model,
		"max_tokens":     r.MaxTokens,
		"ignore_eos":     true,
		"stream":         true,
		"stream_options": map[string]bool{"include_usage": true},
	}
	if r.Messages != nil {
		msgs := make([]message, len(r.Messages))
		for i, m := range r.Messages {
			msgs[i] = message{m.Role, m.Content}
		}
		body["messages"] = msgs
	} else {
		body["prompt"] = r.Prompt
		body["add_special_tokens"] = false
	}
	return json.Marshal(body)
}

// TokenLists returns every request's prompt tokens, in request order.
func (w *Workload) TokenLists() [][]uint32 {
	out := make([][]uint32, len(w.Requests))
	for i := range w.Requests {
		out[i] = w.Requests[i].Tokens()
	}
	return out
}
