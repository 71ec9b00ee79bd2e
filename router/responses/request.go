package responses

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/llmgw/llmgw/router/openai"
)

// Request is what routing needs from a Responses API body.
type Request struct {
	Model              string
	Stream             bool
	Store              bool // OpenAI's default is true
	Background         bool
	PreviousResponseID string
	Instructions       string
	// Input holds the input items; a string input becomes one user message
	// item {"type":"message","role":"user","content":"..."}.
	Input           []json.RawMessage
	MaxOutputTokens int64  // 0 when unset
	Body            []byte // as received

	// items is what Parse read from Input, reused while Input is unchanged.
	items []item
	// The fields below shape the rendered prompt or its key.
	tools      json.RawMessage
	toolChoice json.RawMessage
	effort     string // reasoning.effort, "" when unset
	cacheSalt  json.RawMessage
	truncate   bool // truncation "auto": keep the last max_model_len tokens
}

// rawRequest holds the fields Parse reads, each raw so that a wrong type
// can be named.
type rawRequest struct {
	Model              json.RawMessage `json:"model"`
	Stream             json.RawMessage `json:"stream"`
	Store              json.RawMessage `json:"store"`
	Background         json.RawMessage `json:"background"`
	PreviousResponseID json.RawMessage `json:"previous_response_id"`
	Instructions       json.RawMessage `json:"instructions"`
	Input              json.RawMessage `json:"input"`
	MaxOutputTokens    json.RawMessage `json:"max_output_tokens"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Reasoning          json.RawMessage `json:"reasoning"`
	CacheSalt          json.RawMessage `json:"cache_salt"`
	Truncation         json.RawMessage `json:"truncation"`
	Prompt             json.RawMessage `json:"prompt"`
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", openai.ErrBadRequest, fmt.Sprintf(format, args...))
}

// Parse reads body as a Responses API request. Errors wrap
// openai.ErrBadRequest and name the offending field; they cover what vLLM's
// ResponsesRequest validation refuses among the fields routing reads.
func Parse(body []byte) (*Request, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, bad("the request body must be a JSON object")
	}
	var raw rawRequest
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, bad("malformed JSON: %v", err)
	}
	r := &Request{Body: body, Store: true}
	if err := scalars(&raw, r); err != nil {
		return nil, err
	}
	if r.Model == "" {
		return nil, bad("model is required")
	}
	if !isNull(raw.Prompt) {
		return nil, bad("prompt: prompt template is not supported")
	}
	// vLLM's validate_background reads store with a default of true, so an
	// explicit null store refuses background as false does.
	if r.Background && !r.Store {
		return nil, bad("background can only be used when `store` is true")
	}
	input, items, err := parseInput(raw.Input)
	if err != nil {
		return nil, err
	}
	r.Input, r.items = input, items
	if err := promptFields(&raw, r); err != nil {
		return nil, err
	}
	return r, nil
}

// scalars reads the plain fields. A null is the field's default, except
// store: vLLM keeps an explicit null, which then counts as false.
func scalars(raw *rawRequest, r *Request) error {
	if err := str(raw.Model, "model", &r.Model); err != nil {
		return err
	}
	if err := boolean(raw.Stream, "stream", &r.Stream); err != nil {
		return err
	}
	if string(raw.Store) == "null" {
		r.Store = false
	} else if err := boolean(raw.Store, "store", &r.Store); err != nil {
		return err
	}
	if err := boolean(raw.Background, "background", &r.Background); err != nil {
		return err
	}
	if err := str(raw.PreviousResponseID, "previous_response_id", &r.PreviousResponseID); err != nil {
		return err
	}
	if err := str(raw.Instructions, "instructions", &r.Instructions); err != nil {
		return err
	}
	if !isNull(raw.MaxOutputTokens) {
		if err := json.Unmarshal(raw.MaxOutputTokens, &r.MaxOutputTokens); err != nil {
			return bad("max_output_tokens must be an integer")
		}
	}
	return nil
}

// promptFields reads the fields other than the input that change the
// rendered prompt or its key.
func promptFields(raw *rawRequest, r *Request) error {
	if err := checkTools(raw.Tools); err != nil {
		return err
	}
	r.tools = raw.Tools
	r.toolChoice = raw.ToolChoice
	if !isNull(raw.Reasoning) {
		var reasoning struct {
			Effort json.RawMessage `json:"effort"`
		}
		if err := json.Unmarshal(raw.Reasoning, &reasoning); err != nil {
			return bad("reasoning must be an object")
		}
		if err := str(reasoning.Effort, "reasoning.effort", &r.effort); err != nil {
			return err
		}
	}
	if !isNull(raw.CacheSalt) {
		var salt string
		if json.Unmarshal(raw.CacheSalt, &salt) != nil || salt == "" {
			return bad("cache_salt must be a non-empty string if provided")
		}
		r.cacheSalt = raw.CacheSalt
	}
	var truncation string
	if err := str(raw.Truncation, "truncation", &truncation); err != nil {
		return err
	}
	switch truncation {
	case "", "disabled":
	case "auto":
		r.truncate = true
	default:
		return bad("truncation must be \"auto\" or \"disabled\"")
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

func str(raw json.RawMessage, field string, dst *string) error {
	if isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return bad("%s must be a string", field)
	}
	return nil
}

func boolean(raw json.RawMessage, field string, dst *bool) error {
	if isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return bad("%s must be a boolean", field)
	}
	return nil
}
