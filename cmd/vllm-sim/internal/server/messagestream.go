package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
)

// The conversion of chat answers to Anthropic messages, as vLLM's
// messages_full_converter and message_stream_converter do it. Field order
// and omitted fields follow pydantic's dumps there: the JSON answer drops
// null fields (exclude_none); stream events carry only the fields set
// (exclude_unset), so message_start's message has no type or role.

// chatAnswer is the part of a chat completion (or chunk) the conversion reads.
type chatAnswer struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message *chatAnswerMessage `json:"message"`
		Delta   *chatAnswerMessage `json:"delta"`
		Finish  *string            `json:"finish_reason"`
	} `json:"choices"`
	Usage            *usage          `json:"usage"`
	KVTransferParams json.RawMessage `json:"kv_transfer_params"`
}

type chatAnswerMessage struct {
	Content   *string `json:"content"`
	Reasoning *string `json:"reasoning"`
	ToolCalls []struct {
		Index    int     `json:"index"`
		ID       *string `json:"id"`
		Function *struct {
			Name      *string `json:"name"`
			Arguments string  `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// stopReasons maps a chat finish reason to Anthropic's stop_reason.
var stopReasons = map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
}

type messageUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

type messageJSON struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Role             string          `json:"role"`
	Content          []contentBlock  `json:"content"`
	Model            string          `json:"model"`
	StopReason       string          `json:"stop_reason,omitempty"`
	Usage            messageUsage    `json:"usage"`
	KVTransferParams json.RawMessage `json:"kv_transfer_params,omitempty"`
}

// messageOf converts a whole chat completion: thinking, then text, then one
// tool_use block per tool call.
func messageOf(c chatAnswer) messageJSON {
	m := messageJSON{ID: c.ID, Type: "message", Role: "assistant", Content: []contentBlock{}, Model: c.Model}
	if c.Usage != nil {
		m.Usage = messageUsage{c.Usage.PromptTokens, c.Usage.CompletionTokens}
	}
	if string(c.KVTransferParams) != "null" {
		m.KVTransferParams = c.KVTransferParams
	}
	ch := c.Choices[0]
	if ch.Finish != nil {
		m.StopReason = stopReasons[*ch.Finish]
	}
	msg := ch.Message
	if msg == nil {
		return m
	}
	if msg.Reasoning != nil && *msg.Reasoning != "" {
		m.Content = append(m.Content, contentBlock{Type: "thinking", Thinking: msg.Reasoning, Signature: signature()})
	}
	if msg.Content != nil && *msg.Content != "" {
		m.Content = append(m.Content, contentBlock{Type: "text", Text: msg.Content})
	}
	for _, tc := range msg.ToolCalls {
		if tc.Function == nil {
			continue
		}
		b := contentBlock{Type: "tool_use", Input: json.RawMessage(tc.Function.Arguments)}
		if tc.ID != nil {
			b.ID = *tc.ID
		}
		if tc.Function.Name != nil {
			b.Name = *tc.Function.Name
		}
		m.Content = append(m.Content, b)
	}
	return m
}

// signature stands in for a thinking block's signature: vLLM sends a
// random uuid4 hex.
func signature() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeJSONPlain writes v without HTML escaping, as Starlette's
// JSONResponse does.
func writeJSONPlain(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(plainJSON(v))
}

func plainJSON(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
