package enginetok

import (
	"encoding/json"
	"fmt"

	"github.com/llmgw/llmgw/router/openai"
)

// chatFields are the parts of a chat request, as the client sent them,
// that shape its rendered prompt on the engine.
type chatFields struct {
	Messages           json.RawMessage `json:"messages"`
	Tools              json.RawMessage `json:"tools,omitempty"`
	ChatTemplate       json.RawMessage `json:"chat_template,omitempty"`
	ChatTemplateKwargs json.RawMessage `json:"chat_template_kwargs,omitempty"`
}

type chatRequest struct {
	Model string `json:"model"`
	chatFields
	AddGenerationPrompt  bool `json:"add_generation_prompt"`
	ContinueFinalMessage bool `json:"continue_final_message"`
	AddSpecialTokens     bool `json:"add_special_tokens"`
}

type completionRequest struct {
	Model            string `json:"model"`
	Prompt           string `json:"prompt"`
	AddSpecialTokens bool   `json:"add_special_tokens"`
}

// requestBody is the /tokenize body for r's prompt on model: every flag
// explicit, so the engine's defaults (which differ between the two forms)
// never decide.
func requestBody(model string, r *openai.Request) ([]byte, error) {
	if r.Kind != openai.Chat {
		return json.Marshal(completionRequest{Model: model, Prompt: r.Prompt, AddSpecialTokens: r.AddSpecialTokens})
	}
	var f chatFields
	if err := json.Unmarshal(r.Body, &f); err != nil {
		return nil, fmt.Errorf("read the chat request: %w", err)
	}
	return json.Marshal(chatRequest{Model: model, chatFields: f, AddGenerationPrompt: r.AddGenerationPrompt,
		ContinueFinalMessage: r.ContinueFinal, AddSpecialTokens: r.AddSpecialTokens})
}
