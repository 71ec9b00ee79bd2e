package server

import "encoding/json"

// OpenAI request and response shapes, as vLLM serves them. Only the fields
// the simulator acts on are decoded; the rest are accepted and ignored, as
// vLLM ignores sampling parameters it does not need.

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

type completionRequest struct {
	Model string `json:"model"`
	// KVTransferParams is the NixlConnector's, for a P/D step.
	KVTransferParams json.RawMessage `json:"kv_transfer_params"`

	Prompt json.RawMessage `json:"prompt"`
	// MaxTokens tells an absent max_tokens (16) from a null one (no
	// limit but the context), as vLLM's CompletionRequest does.
	MaxTokens        optionalInt     `json:"max_tokens"`
	Stream           bool            `json:"stream"`
	StreamOptions    *streamOptions  `json:"stream_options"`
	Seed             *int64          `json:"seed"`
	IgnoreEOS        bool            `json:"ignore_eos"`
	AddSpecialTokens *bool           `json:"add_special_tokens"`
	CacheSalt        json.RawMessage `json:"cache_salt"`
	// ReturnTokenIDs adds the prompt's and the output's token ids to each
	// choice, as vLLM's return_token_ids does (a stream's first chunk
	// carries prompt_token_ids, every chunk its delta's token_ids).
	ReturnTokenIDs bool `json:"return_token_ids"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// UnmarshalJSON reads a bare string in a content list as a text part, as
// vLLM does.
func (p *contentPart) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*p = contentPart{Type: "text", Text: s}
		return nil
	}
	type plain contentPart
	return json.Unmarshal(b, (*plain)(p))
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type chatRequest struct {
	Model string `json:"model"`
	// KVTransferParams is the NixlConnector's, for a P/D step.
	KVTransferParams json.RawMessage `json:"kv_transfer_params"`

	Messages             []chatMessage   `json:"messages"`
	MaxTokens            *int            `json:"max_tokens"`
	MaxCompletionTokens  *int            `json:"max_completion_tokens"`
	Stream               bool            `json:"stream"`
	StreamOptions        *streamOptions  `json:"stream_options"`
	Seed                 *int64          `json:"seed"`
	IgnoreEOS            bool            `json:"ignore_eos"`
	AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
	ContinueFinalMessage bool            `json:"continue_final_message"`
	AddSpecialTokens     bool            `json:"add_special_tokens"`
	Tools                json.RawMessage `json:"tools"`
	ChatTemplateKwargs   map[string]any  `json:"chat_template_kwargs"`
	CacheSalt            json.RawMessage `json:"cache_salt"`
	ReturnTokenIDs       bool            `json:"return_token_ids"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type usage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details"`
	// inChunk marks a stream chunk's usage, whose absent details vLLM
	// leaves out instead of writing null (MarshalJSON).
	inChunk bool
}

// MarshalJSON writes a usage as vLLM does: a JSON answer is model_dump(),
// so absent details are null; a stream chunk is model_dump_json with
// exclude_unset or exclude_none, so they are left out.
func (u *usage) MarshalJSON() ([]byte, error) {
	type fields usage // without this method
	if u.inChunk && u.PromptTokensDetails == nil {
		return json.Marshal(struct {
			PromptTokens     int `json:"prompt_tokens"`
			TotalTokens      int `json:"total_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}{u.PromptTokens, u.TotalTokens, u.CompletionTokens})
	}
	return json.Marshal((*fields)(u))
}

type completionChoice struct {
	Index          int      `json:"index"`
	Text           string   `json:"text"`
	Logprobs       any      `json:"logprobs"`
	FinishReason   *string  `json:"finish_reason"`
	StopReason     any      `json:"stop_reason"`
	PromptTokenIDs []uint32 `json:"prompt_token_ids,omitempty"`
	TokenIDs       []uint32 `json:"token_ids,omitempty"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
	// KVTransferParams answers a prefill step (kvxfer.Params).
	KVTransferParams any `json:"kv_transfer_params,omitempty"`
}

type chatOutMessage struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []any  `json:"tool_calls"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatOutMessage `json:"message,omitempty"`
	Delta        *chatDelta      `json:"delta,omitempty"`
	Logprobs     any             `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   any             `json:"stop_reason"`
	TokenIDs     []uint32        `json:"token_ids,omitempty"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage,omitempty"`
	// KVTransferParams answers a prefill step (kvxfer.Params).
	KVTransferParams any `json:"kv_transfer_params,omitempty"`
}

type tokenizeRequest struct {
	Model                string          `json:"model"`
	Prompt               *string         `json:"prompt"`
	Messages             []chatMessage   `json:"messages"`
	AddSpecialTokens     *bool           `json:"add_special_tokens"`
	AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
	ContinueFinalMessage bool            `json:"continue_final_message"`
	ReturnTokenStrs      bool            `json:"return_token_strs"`
	Tools                json.RawMessage `json:"tools"`
}

type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []uint32 `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

type detokenizeRequest struct {
	Model  string   `json:"model"`
	Tokens []uint32 `json:"tokens"`
}

type errorBody struct {
	Error errorInfo `json:"error"`
}

type errorInfo struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    int    `json:"code"`
}
