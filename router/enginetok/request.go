package enginetok

import (
	"encoding/json"
	"fmt"
	"strconv"

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
	var x templateFields
	if err := json.Unmarshal(r.Body, &x); err != nil {
		return nil, fmt.Errorf("read the chat request: %w", err)
	}
	kwargs, err := templateKwargs(f.ChatTemplateKwargs, x)
	if err != nil {
		return nil, err
	}
	f.ChatTemplateKwargs = kwargs
	return json.Marshal(chatRequest{Model: model, chatFields: f, AddGenerationPrompt: r.AddGenerationPrompt,
		ContinueFinalMessage: r.ContinueFinal, AddSpecialTokens: r.AddSpecialTokens})
}

// templateFields are the chat request's fields that reach the chat
// template on vLLM's chat path but have no field in TokenizeChatRequest.
type templateFields struct {
	Documents       json.RawMessage `json:"documents"`
	ReasoningEffort *string         `json:"reasoning_effort"`
}

// templateKwargs folds documents and reasoning_effort into the client's
// chat_template_kwargs as ChatCompletionRequest.build_chat_params merges
// them for the chat path: the request's documents and reasoning_effort
// replace the kwargs' own, and reasoning_effort sets enable_thinking
// (false for "none") unless the kwargs name it. /tokenize passes its
// chat_template_kwargs to the same template call, so the engine renders
// the prompt its chat path would.
func templateKwargs(raw json.RawMessage, x templateFields) (json.RawMessage, error) {
	hasDocs := len(x.Documents) > 0 && string(x.Documents) != "null"
	if !hasDocs && x.ReasoningEffort == nil {
		return raw, nil
	}
	kw := map[string]json.RawMessage{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &kw); err != nil {
			return nil, fmt.Errorf("chat_template_kwargs: %w", err)
		}
	}
	if hasDocs {
		kw["documents"] = x.Documents
	}
	if x.ReasoningEffort != nil {
		effort, _ := json.Marshal(*x.ReasoningEffort)
		kw["reasoning_effort"] = effort
		if _, ok := kw["enable_thinking"]; !ok {
			kw["enable_thinking"] = json.RawMessage(strconv.FormatBool(*x.ReasoningEffort != "none"))
		}
	}
	return json.Marshal(kw)
}
