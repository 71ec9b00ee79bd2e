package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/llmgw/llmgw/router/openai"
)

// Request is what routing needs from a /v1/messages body.
type Request struct {
	Model  string
	Stream bool
	// MaxTokens is the required max_tokens: the output budget rate limits
	// charge before the answer reports its usage.
	MaxTokens int64
	// Body is the request as received; the router forwards it unchanged.
	Body []byte

	conv conversation
}

// conversation holds the fields the chat conversion reads, validated as
// vLLM's request models validate them.
type conversation struct {
	model              string
	system             json.RawMessage // string or blocks
	messages           []message
	toolChoice         *toolChoice
	tools              []tool
	toolsGiven         bool
	chatTemplateKwargs json.RawMessage

	// Messages API only (count_tokens does not read them).
	maxTokens    int64
	stream       bool
	sampling     object // stop, temperature, top_p, top_k, kv_transfer_params
	effort       *string
	formatSchema json.RawMessage
	formatType   string
	countingOnly bool
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", openai.ErrBadRequest, fmt.Sprintf(format, args...))
}

// rawRequest is a Messages or count_tokens body, each field kept raw so
// that its type can be checked and its key order kept.
type rawRequest struct {
	Model              json.RawMessage `json:"model"`
	Messages           json.RawMessage `json:"messages"`
	MaxTokens          json.RawMessage `json:"max_tokens"`
	Stream             json.RawMessage `json:"stream"`
	System             json.RawMessage `json:"system"`
	StopSequences      json.RawMessage `json:"stop_sequences"`
	Temperature        json.RawMessage `json:"temperature"`
	TopP               json.RawMessage `json:"top_p"`
	TopK               json.RawMessage `json:"top_k"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              json.RawMessage `json:"tools"`
	OutputConfig       json.RawMessage `json:"output_config"`
	Metadata           json.RawMessage `json:"metadata"`
	KVTransferParams   json.RawMessage `json:"kv_transfer_params"`
	ChatTemplateKwargs json.RawMessage `json:"chat_template_kwargs"`
}

// Parse reads body as vLLM's AnthropicMessagesRequest validates it: model
// (a non-empty string), messages and a positive integer max_tokens are
// required; content blocks must be of a type vLLM knows. Errors wrap
// openai.ErrBadRequest and name the field.
func Parse(body []byte) (*Request, error) {
	raw, err := readRaw(body)
	if err != nil {
		return nil, err
	}
	c, err := readConversation(raw)
	if err != nil {
		return nil, err
	}
	if isNull(raw.MaxTokens) {
		return nil, bad("max_tokens is required")
	}
	if c.maxTokens, err = positiveInt(raw.MaxTokens, "max_tokens"); err != nil {
		return nil, err
	}
	if !isNull(raw.Stream) {
		if err := json.Unmarshal(raw.Stream, &c.stream); err != nil {
			return nil, bad("stream must be a boolean")
		}
	}
	if err := readSampling(raw, c); err != nil {
		return nil, err
	}
	if err := readOutputConfig(raw.OutputConfig, c); err != nil {
		return nil, err
	}
	if !isNull(raw.Metadata) && !isObject(raw.Metadata) {
		return nil, bad("metadata must be an object")
	}
	return &Request{Model: c.model, Stream: c.stream, MaxTokens: c.maxTokens, Body: body, conv: *c}, nil
}

// ParseCountTokens reads a /v1/messages/count_tokens body as vLLM's
// AnthropicCountTokensRequest validates it (model and messages required;
// system, tools, tool_choice and chat_template_kwargs read; anything else
// ignored) and returns the chat-completions body whose rendered prompt
// vLLM counts.
func ParseCountTokens(body []byte) (model string, chat []byte, err error) {
	raw, err := readRaw(body)
	if err != nil {
		return "", nil, err
	}
	c, err := readConversation(raw)
	if err != nil {
		return "", nil, err
	}
	c.countingOnly = true
	chat, err = c.chatBody()
	return c.model, chat, err
}

func readRaw(body []byte) (*rawRequest, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, bad("the request body must be a JSON object")
	}
	var raw rawRequest
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, bad("malformed JSON: %v", err)
	}
	return &raw, nil
}

// readConversation reads the fields both endpoints share.
func readConversation(raw *rawRequest) (*conversation, error) {
	c := &conversation{}
	if isNull(raw.Model) {
		return nil, bad("model is required")
	}
	if err := json.Unmarshal(raw.Model, &c.model); err != nil {
		return nil, bad("model must be a string")
	}
	if c.model == "" {
		return nil, bad("model is required")
	}
	var err error
	if c.messages, err = readMessages(raw.Messages); err != nil {
		return nil, err
	}
	if err := readSystem(raw.System, c); err != nil {
		return nil, err
	}
	if c.toolChoice, err = readToolChoice(raw.ToolChoice); err != nil {
		return nil, err
	}
	if c.tools, err = readTools(raw.Tools); err != nil {
		return nil, err
	}
	c.toolsGiven = !isNull(raw.Tools)
	if !isNull(raw.ChatTemplateKwargs) {
		if !isObject(raw.ChatTemplateKwargs) {
			return nil, bad("chat_template_kwargs must be an object")
		}
		c.chatTemplateKwargs = raw.ChatTemplateKwargs
	}
	return c, nil
}

// readSampling keeps stop_sequences (as stop), temperature, top_p, top_k
// and kv_transfer_params, type-checked, for the chat body.
func readSampling(raw *rawRequest, c *conversation) error {
	fields := []struct {
		name, as string
		v        json.RawMessage
		ok       func(json.RawMessage) bool
		want     string
	}{
		{"stop_sequences", "stop", raw.StopSequences, isStringList, "a list of strings"},
		{"temperature", "temperature", raw.Temperature, isNumber, "a number"},
		{"top_p", "top_p", raw.TopP, isNumber, "a number"},
		{"top_k", "top_k", raw.TopK, isInteger, "an integer"},
		{"kv_transfer_params", "kv_transfer_params", raw.KVTransferParams, isObject, "an object"},
	}
	for _, f := range fields {
		if isNull(f.v) {
			continue
		}
		if !f.ok(f.v) {
			return bad("%s must be %s", f.name, f.want)
		}
		c.sampling = append(c.sampling, member{f.as, f.v})
	}
	return nil
}

// readOutputConfig reads output_config: effort (vLLM's reasoning_effort)
// and format (a JSON schema for structured output).
func readOutputConfig(raw json.RawMessage, c *conversation) error {
	if isNull(raw) {
		return nil
	}
	var oc struct {
		Effort json.RawMessage `json:"effort"`
		Format json.RawMessage `json:"format"`
	}
	if json.Unmarshal(raw, &oc) != nil || !isObject(raw) {
		return bad("output_config must be an object")
	}
	if !isNull(oc.Effort) {
		var e string
		if json.Unmarshal(oc.Effort, &e) != nil || !slices.Contains([]string{"low", "medium", "high", "xhigh", "max"}, e) {
			return bad("output_config.effort must be one of low, medium, high, xhigh, max")
		}
		c.effort = &e
	}
	if isNull(oc.Format) {
		return nil
	}
	var f struct {
		Schema json.RawMessage `json:"schema"`
		Type   json.RawMessage `json:"type"`
	}
	if json.Unmarshal(oc.Format, &f) != nil || !isObject(oc.Format) {
		return bad("output_config.format must be an object")
	}
	c.formatType = "json_schema"
	if !isNull(f.Type) && string(f.Type) != `"json_schema"` {
		return bad(`output_config.format.type must be "json_schema"`)
	}
	if !isNull(f.Schema) {
		if !isObject(f.Schema) {
			return bad("output_config.format.schema must be an object")
		}
		c.formatSchema = f.Schema
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

func isNumber(raw json.RawMessage) bool {
	var f float64
	return json.Unmarshal(raw, &f) == nil
}

func isInteger(raw json.RawMessage) bool {
	var f float64
	return json.Unmarshal(raw, &f) == nil && f == math.Trunc(f)
}

func isStringList(raw json.RawMessage) bool {
	var s []string
	return json.Unmarshal(raw, &s) == nil && s != nil
}

// positiveInt reads an integer above zero; like pydantic, it accepts an
// integral float (10.0).
func positiveInt(raw json.RawMessage, field string) (int64, error) {
	var f float64
	if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, bad("%s must be an integer", field)
	}
	if f <= 0 {
		return 0, bad("%s must be positive", field)
	}
	return int64(f), nil
}
