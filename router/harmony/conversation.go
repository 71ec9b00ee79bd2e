package harmony

import (
	"encoding/json"
	"strings"
)

// toolCall is one entry of an assistant message's tool_calls.
type toolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string  `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

// conversation is parse_chat_inputs_to_harmony_messages without its
// final drop: each chat message becomes zero or more Harmony messages,
// tool results addressed by the name of the call they answer.
func conversation(raw []map[string]json.RawMessage) ([]Message, error) {
	names := map[string]string{}
	calls := make([][]toolCall, len(raw))
	for i, m := range raw {
		if tc, ok := m["tool_calls"]; ok && string(tc) != "null" {
			if err := json.Unmarshal(tc, &calls[i]); err != nil {
				return nil, unsupported("read tool_calls: %v", err)
			}
		}
		for _, c := range calls[i] {
			names[c.ID] = c.Function.Name
		}
	}
	var out []Message
	for i, m := range raw {
		msgs, err := chatMessage(m, calls[i], names)
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
	}
	return out, nil
}

// chatMessage is parse_chat_input_to_harmony_message.
func chatMessage(m map[string]json.RawMessage, calls []toolCall, names map[string]string) ([]Message, error) {
	role := str(m["role"])
	reasoning := str(m["reasoning"])
	var out []Message
	switch {
	case role == RoleAssistant && len(calls) > 0:
		if c := textParts(m["content"]); c != "" {
			out = append(out, Message{Role: RoleAssistant, Channel: "commentary", Text: c})
		}
		if reasoning != "" {
			out = append(out, Message{Role: RoleAssistant, Channel: "analysis", Text: reasoning})
		}
		for _, c := range calls {
			args := ""
			if c.Function.Arguments != nil {
				args = *c.Function.Arguments
			}
			out = append(out, Message{Role: RoleAssistant, Channel: "commentary",
				Recipient: "functions." + c.Function.Name, ContentType: "json", Text: args})
		}
		return out, nil
	case role == RoleTool:
		name := names[str(m["tool_call_id"])]
		return []Message{{Role: RoleTool, Name: "functions." + name, Channel: "commentary",
			Recipient: RoleAssistant, Text: textParts(m["content"])}}, nil
	case role == RoleAssistant:
		if reasoning != "" {
			out = append(out, Message{Role: RoleAssistant, Channel: "analysis", Text: reasoning})
		}
		first, all, err := contents(m["content"])
		if err != nil {
			return nil, err
		}
		if first != "" {
			out = append(out, Message{Role: RoleAssistant, Channel: "final", Text: all})
		}
		return out, nil
	case role == RoleUser:
		_, all, err := contents(m["content"])
		if err != nil {
			return nil, err
		}
		return []Message{{Role: RoleUser, Text: all}}, nil
	}
	// A later system or developer message renders differently across vLLM
	// releases (plain text, or structured content); other roles fail there.
	return nil, unsupported("a %q message after the first", role)
}

// textParts is flatten_chat_text_content: a string as is, or the text of
// a list's parts whose type is "text", joined.
func textParts(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []map[string]json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if str(p["type"]) == "text" {
			b.WriteString(str(p["text"]))
		}
	}
	return b.String()
}

// contents reads a user or assistant message's content as vLLM's default
// branch does: a string is one text, a list one text per part (its "text"
// or ""). It returns the first text and all of them joined, as the
// library renders a message's several texts back to back.
func contents(raw json.RawMessage) (first, all string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, s, nil
	}
	var parts []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", "", unsupported("read content: %v", err)
	}
	var b strings.Builder
	for i, p := range parts {
		t := str(p["text"])
		if i == 0 {
			first = t
		}
		b.WriteString(t)
	}
	return first, b.String(), nil
}

// dropCurrentTurnAnalysis is vLLM's auto_drop_analysis_messages: in the
// current turn (after the last user message), analysis before the turn's
// last final answer is dropped. The library then drops, when the last
// assistant message is final, the analysis before the first final one
// (RenderForCompletion).
func dropCurrentTurnAnalysis(msgs []Message) []Message {
	start := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			start = i + 1
			break
		}
	}
	last := -1
	for i := len(msgs) - 1; i >= start; i-- {
		if msgs[i].Role == RoleAssistant && msgs[i].Channel == "final" {
			last = i
			break
		}
	}
	if last < start {
		return msgs
	}
	out := msgs[:0:0]
	for i, m := range msgs {
		if start <= i && i < last && m.Channel == "analysis" && m.Role != RoleUser {
			continue
		}
		out = append(out, m)
	}
	return out
}
