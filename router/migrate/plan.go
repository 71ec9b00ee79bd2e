package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/router/openai"
)

// Reasons a stream is not migrated, as the refused metric labels them.
const (
	ReasonDisabled   = "disabled"
	ReasonN          = "n"
	ReasonBestOf     = "best_of"
	ReasonEcho       = "echo"
	ReasonLogprobs   = "logprobs"
	ReasonBatch      = "batch"
	ReasonSuffix     = "suffix"
	ReasonStructured = "structured_output"
	ReasonToolCalls  = "tool_calls"
	ReasonReasoning  = "reasoning"
	ReasonNoTokenIDs = "no_token_ids"
	ReasonUnparsed   = "unparsed_event"
	ReasonAttempts   = "attempts"
	ReasonBudget     = "budget"
	ReasonExhausted  = "exhausted"
	ReasonNoReplica  = "no_replica"
)

// completionsMaxTokens is the max_tokens vLLM applies to /v1/completions
// when the request has no such field (OpenAI's legacy default; the
// field's default in vLLM's CompletionRequest, so an explicit null is
// no limit).
const completionsMaxTokens = 16

// Plan is a streamed request that can be continued, and what its
// continuation needs.
type Plan struct {
	kind   openai.Kind
	body   []byte                     // the client's request as it came
	fields map[string]json.RawMessage // the client's request, field by field
	// clientIDs: the client asked for return_token_ids itself, so the
	// token ids stay in the chunks it gets.
	clientIDs    bool
	includeUsage bool
	// maxTokens bounds the output when bounded (unbounded: a chat
	// request without one gets whatever context is left).
	maxTokens int
	bounded   bool
}

// Refusal is a request that cannot be continued: Reason labels it, Detail
// says why in words for the client's error event.
type Refusal struct{ Reason, Detail string }

func (r *Refusal) Error() string { return r.Detail }

// Check reads a request body: (nil, nil, nil) when it is not a stream
// (nothing to continue), a Refusal when the stream could not be continued,
// else its Plan. An error is a body that is not a JSON object.
func Check(kind openai.Kind, body []byte) (*Plan, *Refusal, error) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, nil, fmt.Errorf("migrate: request body: %w", err)
	}
	if f == nil {
		return nil, nil, errors.New("migrate: request body is null")
	}
	var stream bool
	if json.Unmarshal(f["stream"], &stream) != nil || !stream {
		return nil, nil, nil
	}
	p := &Plan{kind: kind, body: body, fields: f}
	if r := p.refusal(); r != nil {
		return nil, r, nil
	}
	_ = json.Unmarshal(f["return_token_ids"], &p.clientIDs)
	var so struct {
		IncludeUsage bool `json:"include_usage"`
	}
	_ = json.Unmarshal(f["stream_options"], &so)
	p.includeUsage = so.IncludeUsage
	for _, name := range p.maxTokenFields() {
		if raw, ok := f[name]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, &p.maxTokens); err != nil {
				return nil, nil, fmt.Errorf("migrate: %s: %w", name, err)
			}
			p.bounded = true
			break
		}
	}
	if _, set := f["max_tokens"]; !set && kind == openai.Completion {
		// Absent, not null: an explicit null is no limit, as for chat.
		p.maxTokens, p.bounded = completionsMaxTokens, true
	}
	return p, nil, nil
}

// maxTokenFields are the fields that bound the output, the one vLLM reads
// first first.
func (p *Plan) maxTokenFields() []string {
	if p.kind == openai.Chat {
		return []string{"max_completion_tokens", "max_tokens"}
	}
	return []string{"max_tokens"}
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null" || string(t) == "false"
}

// refusal names the first feature the request uses that a continuation
// cannot reproduce.
func (p *Plan) refusal() *Refusal {
	f := p.fields
	num := func(name string) float64 { return number(f[name]) }
	switch {
	case num("n") > 1:
		return &Refusal{ReasonN, "requests with n > 1 are not migrated: their choices cannot be continued one by one"}
	case num("best_of") > 1:
		return &Refusal{ReasonBestOf, "requests with best_of > 1 are not migrated: the best sequence is not known until the end"}
	case !isNull(f["echo"]):
		return &Refusal{ReasonEcho, "requests with echo are not migrated: the continuation would echo another prompt"}
	case !isNull(f["logprobs"]) || num("top_logprobs") != 0 || !isNull(f["prompt_logprobs"]):
		return &Refusal{ReasonLogprobs, "requests with logprobs are not migrated: a continuation's offsets and prompt logprobs would restart"}
	case !isNull(f["suffix"]):
		return &Refusal{ReasonSuffix, "requests with a suffix are not migrated"}
	case grammar(f["response_format"]) || !isNull(f["structured_outputs"]) || !isNull(f["guided_json"]) ||
		!isNull(f["guided_regex"]) || !isNull(f["guided_choice"]) || !isNull(f["guided_grammar"]):
		return &Refusal{ReasonStructured, "requests with structured output are not migrated: the grammar would restart inside the partial answer"}
	}
	if p.kind == openai.Completion {
		if _, ok := f["prompt_embeds"]; ok {
			return &Refusal{ReasonBatch, "requests with prompt_embeds are not migrated"}
		}
		if _, one := singlePrompt(f["prompt"]); !one {
			return &Refusal{ReasonBatch, "requests with a batch of prompts are not migrated"}
		}
	}
	return nil
}

// number reads a request's numeric field as vLLM's pydantic models do in
// their lax mode: 2, 2.0 and "2" are all 2 (0 when absent, null or not a
// number; vLLM refuses those that are not).
func number(raw json.RawMessage) float64 {
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if n, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return n
		}
	}
	return 0
}

// grammar reports whether response_format asks for structured output:
// any format but {"type": "text"}, which vLLM's
// structured_outputs_from_response_format ignores.
func grammar(raw json.RawMessage) bool {
	if isNull(raw) {
		return false
	}
	var rf struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(raw, &rf) != nil || rf.Type != "text"
}

// singlePrompt reports whether raw, a value of a decoded object, is one
// prompt (a string or a list of token ids), not a batch. A string is known
// by its first byte: decoding a long prompt only to learn that it is one
// would cost a pass over it on every streamed request.
func singlePrompt(raw json.RawMessage) (json.RawMessage, bool) {
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' {
		return raw, true
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return raw, true
	}
	return nil, false
}

// ClientWantsTokenIDs reports whether the client asked for the token ids
// itself (they stay in the chunks it gets).
func (p *Plan) ClientWantsTokenIDs() bool { return p.clientIDs }

// Forward returns the body to send the first replica: the client's, with
// return_token_ids so that every chunk says which tokens it carries. The
// client's bytes go as they came, the field put in front of them; only a
// body that sets it already (to false or null) is encoded again. Encoding
// a long prompt's body again cost more than everything else migration adds
// to a streamed request (BenchmarkPlan).
func (p *Plan) Forward() []byte {
	if p.clientIDs {
		return p.body
	}
	if _, set := p.fields["return_token_ids"]; !set {
		return prependField(p.body, `"return_token_ids":true`)
	}
	return p.with(map[string]any{"return_token_ids": true})
}

// prependField puts field (`"name":value`) first in obj, a JSON object
// that decoded without error.
func prependField(obj []byte, field string) []byte {
	open := bytes.IndexByte(obj, '{')
	rest := obj[open+1:]
	out := make([]byte, 0, len(obj)+len(field)+1)
	out = append(append(out, obj[:open+1]...), field...)
	if t := bytes.TrimSpace(rest); len(t) == 0 || t[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// with returns the request with fields replaced (nil removes one).
func (p *Plan) with(set map[string]any) []byte {
	out := make(map[string]any, len(p.fields)+len(set))
	for k, v := range p.fields {
		out[k] = v
	}
	for k, v := range set {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	b, _ := json.Marshal(out) // RawMessage values from a decoded object, and plain values: cannot fail
	return b
}

// Progress is what has reached the client when the stream broke.
type Progress struct {
	// PromptIDs are the prompt's token ids as the engine reported them
	// (completions only).
	PromptIDs []uint32
	// IDs are the generated token ids so far; Text their text as streamed.
	IDs  []uint32
	Text string
}

// Continue builds the request that continues the answer after pr: the
// remaining tokens, on top of the ones already generated. The Refusal is
// set when no continuation can be built: the answer is at its max_tokens,
// or the completions engine did not report token ids.
func (p *Plan) Continue(pr Progress) ([]byte, *Refusal) {
	// A continuation is a request of its own: a disaggregated decode
	// step's kv_transfer_params name blocks the prefill replica released
	// once they were read, so they go, and the new replica computes or
	// finds the prompt itself.
	set := map[string]any{"return_token_ids": true, "kv_transfer_params": nil}
	if p.bounded {
		left := p.maxTokens - len(pr.IDs)
		if left < 1 {
			return nil, &Refusal{ReasonExhausted, fmt.Sprintf("the answer already has its %d tokens", p.maxTokens)}
		}
		for _, name := range p.maxTokenFields() {
			if _, ok := p.fields[name]; ok {
				set[name] = left
			}
		}
		if p.kind == openai.Completion {
			set["max_tokens"] = left
		}
	}
	var minTokens int
	if json.Unmarshal(p.fields["min_tokens"], &minTokens) == nil && minTokens > 0 {
		set["min_tokens"] = max(minTokens-len(pr.IDs), 0)
	}
	// vLLM keeps the last truncate_prompt_tokens of the prompt it renders
	// (-1: max_model_len). The completions ids are that prompt already; a
	// chat continuation renders the partial answer too, one token per
	// generated one, about (its text is tokenized again).
	var truncate int
	if json.Unmarshal(p.fields["truncate_prompt_tokens"], &truncate) == nil && truncate > 0 {
		if p.kind == openai.Completion {
			set["truncate_prompt_tokens"] = nil
		} else {
			set["truncate_prompt_tokens"] = truncate + len(pr.IDs)
		}
	}
	switch p.kind {
	case openai.Completion:
		if len(pr.PromptIDs) == 0 {
			return nil, &Refusal{ReasonNoTokenIDs, "the engine did not report the prompt's token ids (return_token_ids)"}
		}
		set["prompt"] = append(append(make([]uint32, 0, len(pr.PromptIDs)+len(pr.IDs)), pr.PromptIDs...), pr.IDs...)
		set["add_special_tokens"] = false // the ids already hold them
	default:
		msgs, err := p.continuedMessages(pr.Text)
		if err != nil {
			return nil, &Refusal{ReasonBatch, err.Error()}
		}
		set["messages"] = msgs
		set["continue_final_message"] = true
		set["add_generation_prompt"] = false
	}
	return p.with(set), nil
}

// continuedMessages appends the partial answer as the final assistant
// message, or extends the request's own final assistant message when the
// client already asked to continue it.
func (p *Plan) continuedMessages(text string) ([]json.RawMessage, error) {
	var msgs []json.RawMessage
	if err := json.Unmarshal(p.fields["messages"], &msgs); err != nil || len(msgs) == 0 {
		return nil, errors.New("the request's messages are not a list")
	}
	var cont bool
	_ = json.Unmarshal(p.fields["continue_final_message"], &cont)
	if cont {
		var last map[string]json.RawMessage
		var content string
		if json.Unmarshal(msgs[len(msgs)-1], &last) == nil && json.Unmarshal(last["content"], &content) == nil {
			last["content"], _ = json.Marshal(content + text)
			msgs[len(msgs)-1], _ = json.Marshal(last)
			return msgs, nil
		}
		return nil, errors.New("the final message to continue has no string content")
	}
	m, _ := json.Marshal(map[string]string{"role": "assistant", "content": text})
	return append(msgs, m), nil
}
