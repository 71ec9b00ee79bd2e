package server

import (
	"encoding/json"
	"time"
)

// responseObject is vLLM's ResponsesResponse, its fields in vLLM's order
// (ResponsesResponse.from_request): request fields echoed, null or vLLM's
// default when the client left them out.
type responseObject struct {
	ID                 string          `json:"id"`
	CreatedAt          int64           `json:"created_at"`
	IncompleteDetails  any             `json:"incomplete_details"`
	Instructions       *string         `json:"instructions"`
	Metadata           json.RawMessage `json:"metadata"`
	Model              string          `json:"model"`
	Object             string          `json:"object"`
	Output             []outputMessage `json:"output"`
	ParallelToolCalls  json.RawMessage `json:"parallel_tool_calls"`
	Temperature        float64         `json:"temperature"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              json.RawMessage `json:"tools"`
	TopP               float64         `json:"top_p"`
	Background         bool            `json:"background"`
	MaxOutputTokens    int             `json:"max_output_tokens"`
	MaxToolCalls       json.RawMessage `json:"max_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Prompt             any             `json:"prompt"`
	Reasoning          json.RawMessage `json:"reasoning"`
	ServiceTier        json.RawMessage `json:"service_tier"`
	Status             string          `json:"status"`
	Text               json.RawMessage `json:"text"`
	TopLogprobs        any             `json:"top_logprobs"`
	Truncation         json.RawMessage `json:"truncation"`
	Usage              *responseUsage  `json:"usage"`
	User               json.RawMessage `json:"user"`
	InputMessages      any             `json:"input_messages"`
	OutputMessages     any             `json:"output_messages"`
}

// outputMessage is OpenAI's ResponseOutputMessage; Summary is the extra
// field vLLM's streamed output_item.done adds (absent elsewhere).
type outputMessage struct {
	ID      string          `json:"id"`
	Content []outputText    `json:"content"`
	Role    string          `json:"role"`
	Status  string          `json:"status"`
	Type    string          `json:"type"`
	Summary json.RawMessage `json:"summary,omitempty"`
}

// outputText is OpenAI's ResponseOutputText; Logprobs is null in answers
// and [] in a stream's content_part.added.
type outputText struct {
	Annotations []any  `json:"annotations"`
	Text        string `json:"text"`
	Type        string `json:"type"`
	Logprobs    []any  `json:"logprobs"`
}

// responseUsage is vLLM's ResponseUsage. The per-turn lists are vLLM's
// defaults, empty: only its multi-turn tool contexts fill them.
type responseUsage struct {
	InputTokens        int                 `json:"input_tokens"`
	InputTokensDetails inputTokensDetails  `json:"input_tokens_details"`
	OutputTokens       int                 `json:"output_tokens"`
	OutputTokenDetails outputTokensDetails `json:"output_tokens_details"`
	TotalTokens        int                 `json:"total_tokens"`
}

type inputTokensDetails struct {
	CachedTokens        int   `json:"cached_tokens"`
	InputTokensPerTurn  []int `json:"input_tokens_per_turn"`
	CachedTokensPerTurn []int `json:"cached_tokens_per_turn"`
}

type outputTokensDetails struct {
	ReasoningTokens         int   `json:"reasoning_tokens"`
	ToolOutputTokens        int   `json:"tool_output_tokens"`
	OutputTokensPerTurn     []int `json:"output_tokens_per_turn"`
	ToolOutputTokensPerTurn []int `json:"tool_output_tokens_per_turn"`
}

// responseObject builds the answer to c: queued (res nil) for a
// background request, else finished with res's tokens and text.
func (s *Server) responseObject(c *responsesCall, prompt int, res *result, text string) *responseObject {
	e := c.extras
	obj := &responseObject{
		ID: c.id, CreatedAt: time.Now().Unix(), Metadata: e.Metadata, Model: c.model, Object: "response",
		Output: []outputMessage{}, ParallelToolCalls: orDefault(e.ParallelToolCalls, "true"),
		Temperature: orFloat(e.Temperature, 1), ToolChoice: orDefault(e.ToolChoice, `"auto"`),
		Tools: orDefault(e.Tools, "[]"), TopP: orFloat(e.TopP, 1), Background: c.req.Background,
		MaxOutputTokens: c.max, MaxToolCalls: e.MaxToolCalls, Reasoning: e.Reasoning,
		ServiceTier: orDefault(e.ServiceTier, `"auto"`), Status: "queued", Text: e.Text,
		Truncation: orDefault(e.Truncation, `"disabled"`), User: e.User,
	}
	if c.req.Instructions != "" {
		obj.Instructions = &c.req.Instructions
	}
	if id := c.req.PreviousResponseID; id != "" {
		obj.PreviousResponseID = &id
	}
	if res == nil {
		return obj
	}
	obj.Status = "completed"
	if res.reason == "length" {
		obj.Status = "incomplete"
		obj.IncompleteDetails = map[string]string{"reason": "max_output_tokens"}
	}
	msg := outputMessage{ID: "msg_" + s.uuid(), Content: []outputText{}, Role: "assistant", Status: "completed", Type: "message"}
	if text != "" {
		msg.Content = append(msg.Content, outputText{Annotations: []any{}, Text: text, Type: "output_text"})
	}
	obj.Output = []outputMessage{msg}
	obj.Usage = &responseUsage{
		InputTokens: prompt, OutputTokens: len(res.ids), TotalTokens: prompt + len(res.ids),
		InputTokensDetails: inputTokensDetails{CachedTokens: res.cached, InputTokensPerTurn: []int{}, CachedTokensPerTurn: []int{}},
		OutputTokenDetails: outputTokensDetails{OutputTokensPerTurn: []int{}, ToolOutputTokensPerTurn: []int{}},
	}
	return obj
}

func orDefault(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(def)
	}
	return raw
}

func orFloat(v *float64, def float64) float64 {
	if v == nil {
		return def
	}
	return *v
}
