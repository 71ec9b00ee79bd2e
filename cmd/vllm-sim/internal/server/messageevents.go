package server

import (
	"encoding/json"
	"fmt"
)

// streamConverter turns a chat SSE stream into Anthropic's event sequence
// as vLLM's message_stream_converter does: message_start from the first
// chunk (its usage gives input_tokens), a content block per run of
// thinking, text or one tool call (content_block_start, deltas,
// content_block_stop; a thinking block ends with a signature_delta),
// message_delta with stop_reason and usage from the usage-only chunk, and
// message_stop for [DONE]. vLLM sends no ping.
type streamConverter struct {
	started   bool
	finish    *string
	next      int    // the index the next block gets
	active    string // the open block's type, "" for none
	index     int    // the open block's index
	sig       string // an open thinking block's signature, until sent
	toolUseID string // the open tool_use block's id
	toolIDs   map[int]string
	sigSent   string // the last signature sent, for tests
}

// event is one Anthropic stream event; nil fields are left out, as the
// fields vLLM never sets are.
type event struct {
	Type         string        `json:"type"`
	Message      any           `json:"message,omitempty"`
	Delta        any           `json:"delta,omitempty"`
	ContentBlock *contentBlock `json:"content_block,omitempty"`
	Index        *int          `json:"index,omitempty"`
	Error        any           `json:"error,omitempty"`
	Usage        *messageUsage `json:"usage,omitempty"`
}

type blockDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
	Signature   *string `json:"signature,omitempty"`
}

// messageStart is message_start's message: only the fields vLLM sets.
type messageStart struct {
	ID           string         `json:"id"`
	Content      []contentBlock `json:"content"`
	Model        string         `json:"model"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        messageUsage   `json:"usage"`
}

func sseEvent(e event) string {
	return fmt.Sprintf("event: %s\ndata: %s\n\n", e.Type, plainJSON(e))
}

// convert returns the events for one chat SSE data payload.
func (c *streamConverter) convert(data string) string {
	if data == "[DONE]" {
		return sseEvent(event{Type: "message_stop"})
	}
	var chunk chatAnswer
	if err := json.Unmarshal([]byte(data), &chunk); err != nil {
		return sseEvent(event{Type: "error", Error: messagesErrorInfo{Type: "internal_error", Message: err.Error()}})
	}
	if !c.started {
		c.started = true
		start := messageStart{ID: chunk.ID, Content: []contentBlock{}, Model: chunk.Model}
		if chunk.Usage != nil {
			start.Usage.InputTokens = chunk.Usage.PromptTokens
		}
		return sseEvent(event{Type: "message_start", Message: start})
	}
	if len(chunk.Choices) == 0 {
		out := c.stop()
		reason := "stop"
		if c.finish != nil {
			reason = *c.finish
		}
		var u messageUsage
		if chunk.Usage != nil {
			u = messageUsage{chunk.Usage.PromptTokens, chunk.Usage.CompletionTokens}
		}
		var stop *string
		if r, ok := stopReasons[reason]; ok {
			stop = &r
		}
		return out + sseEvent(event{Type: "message_delta", Delta: struct {
			StopReason *string `json:"stop_reason"`
		}{stop}, Usage: &u})
	}
	ch := chunk.Choices[0]
	if ch.Finish != nil {
		c.finish = ch.Finish
	}
	if ch.Delta == nil {
		return ""
	}
	return c.deltas(ch.Delta)
}

// deltas converts one chunk's delta: reasoning, then content, then tool calls.
func (c *streamConverter) deltas(d *chatAnswerMessage) string {
	var out string
	if d.Reasoning != nil && *d.Reasoning != "" {
		if c.active != "thinking" {
			out += c.stop() + c.start(contentBlock{Type: "thinking", Thinking: new(string)})
		}
		out += c.delta(blockDelta{Type: "thinking_delta", Thinking: d.Reasoning})
	}
	if d.Content != nil && *d.Content != "" {
		if c.active != "text" {
			out += c.stop() + c.start(contentBlock{Type: "text", Text: new(string)})
		}
		out += c.delta(blockDelta{Type: "text_delta", Text: d.Content})
	}
	for _, tc := range d.ToolCalls {
		id := ""
		if tc.ID != nil {
			id = *tc.ID
			if c.toolIDs == nil {
				c.toolIDs = map[int]string{}
			}
			c.toolIDs[tc.Index] = id
			if c.toolUseID != id && tc.Function != nil && tc.Function.Name != nil {
				out += c.stop() + c.start(contentBlock{Type: "tool_use", ID: id, Name: *tc.Function.Name, Input: json.RawMessage("{}")})
			}
		} else {
			id = c.toolIDs[tc.Index]
		}
		if id != "" && tc.Function != nil && tc.Function.Arguments != "" && c.toolUseID == id {
			out += c.delta(blockDelta{Type: "input_json_delta", PartialJSON: &tc.Function.Arguments})
		}
	}
	return out
}

func (c *streamConverter) start(b contentBlock) string {
	i := c.next
	c.active, c.index, c.sig, c.toolUseID = b.Type, i, "", ""
	switch b.Type {
	case "thinking":
		c.sig = signature()
	case "tool_use":
		c.toolUseID = b.ID
	}
	return sseEvent(event{Type: "content_block_start", ContentBlock: &b, Index: &i})
}

func (c *streamConverter) delta(d blockDelta) string {
	i := c.index
	return sseEvent(event{Type: "content_block_delta", Delta: d, Index: &i})
}

// stop closes the open block, if any: a thinking block first gets its
// signature.
func (c *streamConverter) stop() string {
	if c.active == "" {
		return ""
	}
	var out string
	if c.active == "thinking" && c.sig != "" {
		out = c.delta(blockDelta{Type: "signature_delta", Signature: &c.sig})
		c.sigSent = c.sig
	}
	i := c.index
	out += sseEvent(event{Type: "content_block_stop", Index: &i})
	c.active, c.sig, c.toolUseID = "", "", ""
	c.next++
	return out
}
