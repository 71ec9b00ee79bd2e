package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Kind says which endpoint a request came to.
type Kind int

// Endpoints the router routes.
const (
	Chat       Kind = iota // /v1/chat/completions
	Completion             // /v1/completions
	Embeddings             // /v1/embeddings
	Pooling                // /pooling
	Classify               // /classify
	Score                  // /score, /v1/score
	Rerank                 // /rerank, /v1/rerank, /v2/rerank
)

// IsPooling reports whether k is an endpoint of vLLM's pooling API,
// served by pooling models only.
func (k Kind) IsPooling() bool { return k >= Embeddings && k <= Rerank }

// Message is one chat turn with its content as text: list-style content's
// text parts joined by a newline, as vLLM does for string-content templates.
type Message struct {
	Role    string
	Content string
}

// Request is what routing needs from a request body.
type Request struct {
	Kind   Kind
	Model  string
	Stream bool
	// Messages is the conversation (chat only).
	Messages []Message
	// AddGenerationPrompt and ContinueFinal shape a chat prompt.
	AddGenerationPrompt bool
	ContinueFinal       bool
	// AddSpecialTokens: vLLM's default is true for completions and false
	// for chat.
	AddSpecialTokens bool
	// Prompt is a completion's text prompt (the first one of a list);
	// PromptIDs a token-id prompt. At most one is set.
	Prompt    string
	PromptIDs []uint32
	// CacheSalt is vLLM's cache_salt, mixed into the first block's key.
	CacheSalt string
	// TruncatePromptTokens is vLLM's truncate_prompt_tokens: nil for none,
	// -1 for the model's input limit (unknown to the router), else the
	// number of prompt tokens the replica keeps.
	TruncatePromptTokens *int
	// MaxTokens is max_completion_tokens, else max_tokens; 0 when neither
	// is set. Rate limits charge it before the response reports its usage.
	MaxTokens int64
	// TruncateRight says truncation keeps the first tokens
	// (truncation_side "right") rather than the last (vLLM's default, "left").
	TruncateRight bool
	// Body is the request as received, for template rendering.
	Body []byte
	// Forward, when set, is what the engine is sent instead of Body: a
	// Responses or Messages request is keyed by its chat rendering (Body)
	// but goes to the engine's own endpoint as the client's API.
	Forward []byte
	// Responses marks the chat rendering of a /v1/responses request. vLLM
	// renders chat and Responses input alike through a chat template, but
	// for gpt-oss the Responses API has a Harmony path of its own
	// (previous_input_messages, reasoning items, built-in tools), which an
	// Encoder may not mirror.
	Responses bool
}

// Wire returns the body the engine is sent: Forward when set, else Body.
func (r *Request) Wire() []byte {
	if r.Forward != nil {
		return r.Forward
	}
	return r.Body
}

// ErrBadRequest wraps every parse error; its message is safe for clients.
var ErrBadRequest = errors.New("invalid request")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

type rawRequest struct {
	Model                json.RawMessage `json:"model"`
	Stream               json.RawMessage `json:"stream"`
	Messages             json.RawMessage `json:"messages"`
	Prompt               json.RawMessage `json:"prompt"`
	AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
	ContinueFinalMessage *bool           `json:"continue_final_message"`
	AddSpecialTokens     *bool           `json:"add_special_tokens"`
	CacheSalt            *string         `json:"cache_salt"`
	TruncatePromptTokens *int            `json:"truncate_prompt_tokens"`
	TruncationSide       *string         `json:"truncation_side"`
	MaxTokens            *int64          `json:"max_tokens"`
	MaxCompletionTokens  *int64          `json:"max_completion_tokens"`
	poolingFields
}

// Parse reads body as a request of kind. Errors wrap ErrBadRequest and name
// the offending field.
func Parse(kind Kind, body []byte) (*Request, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, bad("the request body is empty; send a JSON object")
	}
	if trimmed[0] != '{' {
		return nil, bad("the request body must be a JSON object")
	}
	var raw rawRequest
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, bad("malformed JSON: %s", jsonError(err))
	}
	r := &Request{Kind: kind, Body: body}
	if err := str(raw.Model, "model", &r.Model); err != nil {
		return nil, err
	}
	if r.Model == "" {
		return nil, bad("model is required")
	}
	if len(raw.Stream) > 0 && string(raw.Stream) != "null" {
		if err := json.Unmarshal(raw.Stream, &r.Stream); err != nil {
			return nil, bad("stream must be a boolean")
		}
	}
	if raw.CacheSalt != nil {
		r.CacheSalt = *raw.CacheSalt
	}
	if err := truncation(&raw, r); err != nil {
		return nil, err
	}
	if err := maxTokens(&raw, r); err != nil {
		return nil, err
	}
	switch kind {
	case Chat:
		msgs, err := parseMessages(raw.Messages)
		if err != nil {
			return nil, err
		}
		r.Messages = msgs
		r.AddGenerationPrompt = raw.AddGenerationPrompt == nil || *raw.AddGenerationPrompt
		r.ContinueFinal = raw.ContinueFinalMessage != nil && *raw.ContinueFinalMessage
		if r.AddGenerationPrompt && r.ContinueFinal {
			return nil, bad("cannot set both continue_final_message and add_generation_prompt to true")
		}
		r.AddSpecialTokens = raw.AddSpecialTokens != nil && *raw.AddSpecialTokens
	case Completion:
		if err := parsePrompt(raw.Prompt, r); err != nil {
			return nil, err
		}
		r.AddSpecialTokens = raw.AddSpecialTokens == nil || *raw.AddSpecialTokens
	case Embeddings, Pooling, Classify:
		if err := parsePoolingInput(&raw, r); err != nil {
			return nil, err
		}
	case Score, Rerank:
		if err := parseScore(&raw, r); err != nil {
			return nil, err
		}
	default:
		return nil, bad("unknown endpoint kind %d", kind)
	}
	return r, nil
}

// truncation reads truncate_prompt_tokens (-1 or more) and truncation_side
// ("left", the default, or "right"), as vLLM's request models accept them.
func truncation(raw *rawRequest, r *Request) error {
	if raw.TruncationSide != nil {
		switch *raw.TruncationSide {
		case "left":
		case "right":
			r.TruncateRight = true
		default:
			return bad("truncation_side must be \"left\" or \"right\"")
		}
	}
	if raw.TruncatePromptTokens != nil && *raw.TruncatePromptTokens < -1 {
		return bad("truncate_prompt_tokens must be -1 or more")
	}
	r.TruncatePromptTokens = raw.TruncatePromptTokens
	return nil
}

func str(raw json.RawMessage, field string, dst *string) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return bad("%s must be a string", field)
	}
	return nil
}

func parseMessages(raw json.RawMessage) ([]Message, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, bad("messages is required")
	}
	var msgs []struct {
		Role    json.RawMessage `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, bad("messages must be an array of message objects")
	}
	if len(msgs) == 0 {
		return nil, bad("messages must not be empty")
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		if err := str(m.Role, fmt.Sprintf("messages[%d].role", i), &out[i].Role); err != nil {
			return nil, err
		}
		if out[i].Role == "" {
			return nil, bad("messages[%d].role is required", i)
		}
		c, err := content(m.Content)
		if err != nil {
			return nil, bad("messages[%d].content: %s", i, err)
		}
		out[i].Content = c
	}
	return out, nil
}

// textPart is one content part as the approximate keys and the simulated
// tokenizer read it; a bare string in the list is a text part, as vLLM
// reads it.
type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (p *textPart) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*p = textPart{Type: "text", Text: s}
		return nil
	}
	type plain textPart
	return json.Unmarshal(b, (*plain)(p))
}

// content reads a message's content: null, a string, or a list of parts
// whose non-empty text parts are joined by a newline (vLLM drops an empty
// one before joining).
func content(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []textPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or a list of content parts")
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if (p.Type == "text" || p.Type == "") && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// parsePrompt accepts vLLM's four prompt forms; for lists, the first prompt
// decides the route.
func parsePrompt(raw json.RawMessage, r *Request) error {
	if len(raw) == 0 || string(raw) == "null" {
		return bad("prompt is required")
	}
	if json.Unmarshal(raw, &r.Prompt) == nil {
		return nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		if len(texts) == 0 {
			return bad("prompt must not be an empty list")
		}
		r.Prompt = texts[0]
		return nil
	}
	var ids []uint32
	if json.Unmarshal(raw, &ids) == nil {
		if len(ids) == 0 {
			return bad("prompt must not be an empty list")
		}
		r.PromptIDs = ids
		return nil
	}
	var lists [][]uint32
	if json.Unmarshal(raw, &lists) == nil && len(lists) > 0 && len(lists[0]) > 0 {
		r.PromptIDs = lists[0]
		return nil
	}
	return bad("prompt must be a string, a list of strings, a list of token ids, or a list of token-id lists")
}

// jsonError shortens encoding/json's messages for clients.
func jsonError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q has the wrong type (got JSON %s)", te.Field, te.Value)
	}
	return err.Error()
}
