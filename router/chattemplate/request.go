package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Request is the part of an OpenAI chat request that shapes the prompt.
// Messages, Tools, Documents and Kwargs stay raw JSON so that key order
// survives until rendering.
type Request struct {
	Messages             json.RawMessage // array of OpenAI messages
	Tools                json.RawMessage // array of tools, or empty
	Documents            json.RawMessage // array of documents, or empty
	AddGenerationPrompt  bool
	ContinueFinalMessage bool
	ReasoningEffort      string          // "" when absent
	Kwargs               json.RawMessage // chat_template_kwargs object, or empty
}

// ErrIncompatible is returned when a request asks for both a generation
// prompt and continuing the final message, which vLLM rejects.
var ErrIncompatible = errors.New("cannot set both continue_final_message and add_generation_prompt to true")

// ErrUntrustedTemplate is returned for a request that brings its own chat
// template (chat_template, or chat_template_kwargs.chat_template): vLLM
// refuses those unless started with --trust-request-chat-template, and the
// router follows vLLM's default.
var ErrUntrustedTemplate = errors.New("a chat template passed with the request is refused (vLLM needs --trust-request-chat-template)")

// reasoningEfforts are the values vLLM's request model accepts.
var reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// ParseRequest reads the prompt-shaping fields of a /v1/chat/completions
// body and rejects, naming the field, what vLLM's request validation
// rejects among them. add_generation_prompt defaults to true, as in vLLM.
func ParseRequest(body []byte) (Request, error) {
	var r struct {
		Messages             json.RawMessage `json:"messages"`
		Tools                json.RawMessage `json:"tools"`
		Documents            json.RawMessage `json:"documents"`
		AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
		ContinueFinalMessage *bool           `json:"continue_final_message"`
		ReasoningEffort      *string         `json:"reasoning_effort"`
		ChatTemplate         json.RawMessage `json:"chat_template"`
		Kwargs               json.RawMessage `json:"chat_template_kwargs"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return Request{}, fmt.Errorf("chat request: %w", err)
	}
	if isNull(r.Messages) {
		return Request{}, fmt.Errorf("chat request: messages is required")
	}
	req := Request{Messages: r.Messages, Tools: r.Tools, AddGenerationPrompt: true, Kwargs: r.Kwargs}
	if r.AddGenerationPrompt != nil {
		req.AddGenerationPrompt = *r.AddGenerationPrompt
	}
	if r.ContinueFinalMessage != nil {
		req.ContinueFinalMessage = *r.ContinueFinalMessage
	}
	if req.AddGenerationPrompt && req.ContinueFinalMessage {
		return Request{}, fmt.Errorf("chat request: %w", ErrIncompatible)
	}
	if r.ReasoningEffort != nil {
		if !slices.Contains(reasoningEfforts, *r.ReasoningEffort) {
			return Request{}, fmt.Errorf("chat request: reasoning_effort: %q is not one of %v", *r.ReasoningEffort, reasoningEfforts)
		}
		req.ReasoningEffort = *r.ReasoningEffort
	}
	if !isNull(r.ChatTemplate) {
		return Request{}, fmt.Errorf("chat request: chat_template: %w", ErrUntrustedTemplate)
	}
	if isEmptyArray(r.Tools) {
		return Request{}, fmt.Errorf("chat request: %w", errEmptyTools)
	}
	if err := checkKwargs(r.Kwargs); err != nil {
		return Request{}, fmt.Errorf("chat request: %w", err)
	}
	if !isNull(r.Documents) {
		var docs []map[string]string
		if err := json.Unmarshal(r.Documents, &docs); err != nil {
			return Request{}, fmt.Errorf("chat request: documents: want an array of objects with string values")
		}
		req.Documents = r.Documents
	}
	return req, nil
}

// checkKwargs accepts an absent or null chat_template_kwargs, or an object
// without a chat_template of its own.
func checkKwargs(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var kw map[string]json.RawMessage
	if err := json.Unmarshal(raw, &kw); err != nil {
		return fmt.Errorf("chat_template_kwargs: want an object")
	}
	if !isNull(kw["chat_template"]) {
		return fmt.Errorf("chat_template_kwargs.chat_template: %w", ErrUntrustedTemplate)
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

func isEmptyArray(raw json.RawMessage) bool {
	var v []json.RawMessage
	return !isNull(raw) && json.Unmarshal(raw, &v) == nil && len(v) == 0
}
