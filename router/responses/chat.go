package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// chatMessage is one chat-completions message built from input items, as
// vLLM's _construct_message_from_response_item builds it. A message item
// that is not the assistant's passes through unchanged (raw).
type chatMessage struct {
	raw        json.RawMessage
	role       string
	content    json.RawMessage // nil: no content key
	reasoning  *string         // nil: no reasoning key
	toolCalls  []toolCall      // nil: no tool_calls key
	toolCallID string
}

type toolCall struct {
	ID       string       `json:"id"`
	Function callFunction `json:"function"`
	Type     string       `json:"type"`
}

type callFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// writeTo writes the message with vLLM's keys (the chat template path
// reorders them as vLLM's chat_utils does, so only the set matters), or
// the item as the client sent it. Both are valid JSON: the raw item was
// decoded from the request.
func (m chatMessage) writeTo(b *bytes.Buffer) {
	if m.raw != nil {
		b.Write(m.raw)
		return
	}
	b.WriteString(`{"role":`)
	writeJSON(b, m.role)
	if m.content != nil {
		b.WriteString(`,"content":`)
		b.Write(m.content)
	}
	if m.toolCalls != nil {
		b.WriteString(`,"tool_calls":`)
		writeJSON(b, m.toolCalls)
	}
	if m.reasoning != nil {
		b.WriteString(`,"reasoning":`)
		writeJSON(b, *m.reasoning)
	}
	if m.role == "tool" {
		b.WriteString(`,"tool_call_id":`)
		writeJSON(b, m.toolCallID)
	}
	b.WriteByte('}')
}

func writeJSON(b *bytes.Buffer, v any) {
	out, _ := json.Marshal(v) // strings and tool calls always marshal
	b.Write(out)
}

// messages converts the instructions and input items the way vLLM's
// construct_input_messages does for a request without a stored
// predecessor: the instructions as a system message, then each item, an
// item merging into the assistant message before it where vLLM merges
// (a function call into its tool calls, reasoning into a message without
// reasoning, an assistant message into one without content).
func (r *Request) messages(items []item) []chatMessage {
	var msgs []chatMessage
	if r.Instructions != "" {
		content, _ := json.Marshal(r.Instructions)
		msgs = append(msgs, chatMessage{role: "system", content: content})
	}
	start := len(msgs)
	for _, it := range items {
		var prev *chatMessage
		if n := len(msgs); n > start && msgs[n-1].raw == nil && msgs[n-1].role == "assistant" {
			prev = &msgs[n-1]
		}
		if m, ok := convert(it, prev); ok {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// readItems returns the input items as read: Parse's reading while Input
// still holds the items it read (a caller may have replaced them), else a
// fresh one.
func (r *Request) readItems() ([]item, error) {
	if r.itemsCurrent() {
		return r.items, nil
	}
	items := make([]item, len(r.Input))
	for i, raw := range r.Input {
		it, err := readItem(raw, i)
		if err != nil {
			return nil, err
		}
		items[i] = it
	}
	return items, nil
}

func (r *Request) itemsCurrent() bool {
	if len(r.items) != len(r.Input) {
		return false
	}
	for i, it := range r.items {
		in := r.Input[i]
		if len(in) != len(it.raw) || len(in) == 0 || &in[0] != &it.raw[0] {
			return false
		}
	}
	return true
}

// convert turns one item into a message, or merges it into prev (the
// assistant message before it, nil if none) and reports false.
func convert(it item, prev *chatMessage) (chatMessage, bool) {
	switch {
	case it.Type == "function_call":
		name := it.Name
		if it.Namespace != "" {
			name = it.Namespace + namespaceSeparator + it.Name
		}
		call := toolCall{ID: it.CallID, Function: callFunction{Name: name, Arguments: it.Arguments}, Type: "function"}
		if prev != nil {
			prev.toolCalls = append(prev.toolCalls, call)
			return chatMessage{}, false
		}
		return chatMessage{role: "assistant", toolCalls: []toolCall{call}}, true
	case it.Type == "function_call_output":
		return chatMessage{role: "tool", content: it.Output, toolCallID: it.CallID}, true
	case it.Type == "reasoning":
		text := reasoningText(it)
		if prev != nil && prev.reasoning == nil {
			prev.reasoning = &text
			return chatMessage{}, false
		}
		return chatMessage{role: "assistant", reasoning: &text}, true
	case it.Role == "assistant":
		content, _ := json.Marshal(firstText(it.Content))
		if prev != nil && prev.content == nil {
			prev.content = content
			return chatMessage{}, false
		}
		return chatMessage{role: "assistant", content: content}, true
	}
	return chatMessage{raw: it.raw, role: it.Role}, true
}

// namespaceSeparator joins a namespace tool's namespace and name into the
// flat name vLLM renders (vllm/tool_parsers/utils.py).
const namespaceSeparator = "__"

// reasoningText is a reasoning item's text as vLLM reads a dict-form item:
// the first content part's text, else the first summary part's.
func reasoningText(it item) string {
	var content, summary []json.RawMessage
	_ = json.Unmarshal(it.Content, &content)
	if len(content) > 0 {
		return partText(content[0])
	}
	_ = json.Unmarshal(it.Summary, &summary)
	if len(summary) > 0 {
		return partText(summary[0])
	}
	return ""
}

// firstText is an assistant message's text as vLLM reads it: the string
// content, or the first part's text (the other parts are dropped).
func firstText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []json.RawMessage
	if json.Unmarshal(content, &parts) != nil || len(parts) == 0 {
		return ""
	}
	return partText(parts[0])
}

// partText reads a part's "text" ("" when absent or not a string), or the
// part itself when it is a bare string.
func partText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var p struct {
		Text json.RawMessage `json:"text"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return ""
	}
	_ = json.Unmarshal(p.Text, &s)
	return s
}

// continueFinal reports whether vLLM continues the last input item rather
// than starting a new turn (should_continue_final_message): the last item
// is a message or reasoning item whose status is in_progress or
// incomplete.
func continueFinal(items []item) bool {
	if len(items) == 0 {
		return false
	}
	switch it := items[len(items)-1]; it.Type {
	case "", "message", "reasoning":
		return it.Status == "in_progress" || it.Status == "incomplete"
	}
	return false
}

// ChatBody returns the chat-completions request JSON that vLLM's conversion
// of r amounts to: the messages construct_input_messages builds, the
// function tools as construct_tool_dicts converts them, tool_choice,
// max_output_tokens as max_tokens, and the fields that shape the prompt or
// its key (add_generation_prompt and continue_final_message from the last
// item, reasoning.effort as a template variable, cache_salt, truncation
// "auto" as truncate_prompt_tokens -1). Parse it with
// openai.Parse(openai.Chat, ...) and render it with router/chattemplate.
func (r *Request) ChatBody() ([]byte, error) {
	items, err := r.readItems()
	if err != nil {
		return nil, err
	}
	msgs := r.messages(items)
	if len(msgs) == 0 {
		return nil, bad("input must not be empty")
	}
	var b bytes.Buffer
	b.WriteString(`{"model":`)
	writeJSON(&b, r.Model)
	b.WriteString(`,"messages":[`)
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		m.writeTo(&b)
	}
	b.WriteByte(']')
	emptyTools, err := r.writeTools(&b)
	if err != nil {
		return nil, err
	}
	if r.MaxOutputTokens != 0 {
		fmt.Fprintf(&b, `,"max_tokens":%d`, r.MaxOutputTokens)
	}
	if r.Stream {
		b.WriteString(`,"stream":true`)
	}
	if r.cacheSalt != nil {
		b.WriteString(`,"cache_salt":`)
		b.Write(r.cacheSalt)
	}
	if r.truncate {
		b.WriteString(`,"truncate_prompt_tokens":-1`)
	}
	if continueFinal(items) {
		b.WriteString(`,"add_generation_prompt":false,"continue_final_message":true`)
	}
	writeKwargs(&b, r.effort, emptyTools)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeKwargs writes chat_template_kwargs: vLLM's ResponsesRequest has no
// such field (a client's is ignored); its build_chat_params sets
// reasoning_effort from reasoning.effort, without the enable_thinking the
// chat path derives from a top-level reasoning_effort, so the effort goes
// here and not into the chat body's reasoning_effort.
func writeKwargs(b *bytes.Buffer, effort string, emptyTools bool) {
	if effort == "" && !emptyTools {
		return
	}
	b.WriteString(`,"chat_template_kwargs":{`)
	if effort != "" {
		b.WriteString(`"reasoning_effort":`)
		writeJSON(b, effort)
		if emptyTools {
			b.WriteByte(',')
		}
	}
	if emptyTools {
		b.WriteString(`"tools":[]`)
	}
	b.WriteByte('}')
}
