package migrate

import (
	"encoding/json"
)

// chunk is what Stream reads of an SSE chunk from the engine.
type chunk struct {
	ID      json.RawMessage `json:"id"`
	Object  json.RawMessage `json:"object"`
	Created json.RawMessage `json:"created"`
	Model   json.RawMessage `json:"model"`
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Role             string          `json:"role"`
			Content          *string         `json:"content"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
			Reasoning        *string         `json:"reasoning"`
			ReasoningContent *string         `json:"reasoning_content"`
		} `json:"delta"`
		TokenIDs       []uint32 `json:"token_ids"`
		PromptTokenIDs []uint32 `json:"prompt_token_ids"`
		FinishReason   *string  `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	TotalTokens         int `json:"total_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details,omitempty"`
}

// text is the chunk's first choice's text (completions) or content (chat).
func (c *chunk) text() string {
	if len(c.Choices) == 0 {
		return ""
	}
	ch := c.Choices[0]
	switch {
	case ch.Text != nil:
		return *ch.Text
	case ch.Delta != nil && ch.Delta.Content != nil:
		return *ch.Delta.Content
	}
	return ""
}

// roleOnly reports a chat stream's opening chunk: the assistant role with
// no content and no tokens, which a continuation must not repeat.
func (c *chunk) roleOnly() bool {
	if len(c.Choices) != 1 || c.Usage != nil {
		return false
	}
	ch := c.Choices[0]
	return ch.Delta != nil && ch.Delta.Role != "" && (ch.Delta.Content == nil || *ch.Delta.Content == "") &&
		len(ch.TokenIDs) == 0 && ch.FinishReason == nil && len(ch.Delta.ToolCalls) == 0
}

// uncontinuable names what in the chunk a continuation could not carry on
// ("" for nothing): a tool call's partial JSON, or reasoning text that the
// partial assistant message would lose.
func (c *chunk) uncontinuable() string {
	for _, ch := range c.Choices {
		if ch.Delta == nil {
			continue
		}
		if len(ch.Delta.ToolCalls) > 0 && string(ch.Delta.ToolCalls) != "null" && string(ch.Delta.ToolCalls) != "[]" {
			return ReasonToolCalls
		}
		if ch.Delta.Reasoning != nil && *ch.Delta.Reasoning != "" || ch.Delta.ReasoningContent != nil && *ch.Delta.ReasoningContent != "" {
			return ReasonReasoning
		}
	}
	return ""
}

// rewrite re-encodes an event's JSON with the first stream's id, created
// and model (when head is set), without the token ids the client did not
// ask for (stripIDs) or the continuation's prompt ids (stripPrompt), and
// with use in place of its usage (when set).
func rewrite(data []byte, head *chunk, stripIDs, stripPrompt bool, use *usage) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	if head != nil {
		for k, v := range map[string]json.RawMessage{"id": head.ID, "created": head.Created, "model": head.Model} {
			if len(v) > 0 {
				top[k] = v
			}
		}
	}
	if use != nil {
		top["usage"], _ = json.Marshal(use)
	}
	if stripIDs || stripPrompt {
		var choices []map[string]json.RawMessage
		if err := json.Unmarshal(top["choices"], &choices); err == nil && choices != nil {
			for _, c := range choices {
				if stripIDs {
					delete(c, "token_ids")
				}
				delete(c, "prompt_token_ids")
			}
			top["choices"], _ = json.Marshal(choices)
		}
	}
	return json.Marshal(top)
}
