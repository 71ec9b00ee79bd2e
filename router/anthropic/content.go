package anthropic

import (
	"encoding/json"
	"strings"
)

// convertMessage appends m's chat rendering to out, as vLLM's
// _convert_messages does: string content as is; blocks split into text and
// image parts, reasoning (thinking blocks joined), tool_calls (tool_use)
// and, for a user, one tool message per tool_result ahead of the user's own
// message. A user message left without content is dropped; an assistant
// message never is.
func convertMessage(m message, out []any) ([]any, error) {
	msg := object{{"role", m.role}}
	if m.text != nil {
		return append(out, append(msg, member{"content", *m.text})), nil
	}
	var parts, calls []any
	var reasoning []string
	for _, b := range m.blocks {
		var err error
		switch {
		case b.Type == "text" && b.Text != nil && *b.Text != "":
			parts = append(parts, textPart(*b.Text))
		case b.Type == "image" && nonEmptyObject(b.Source):
			var url string
			if url, err = imageURL(b.Source); err == nil {
				parts = append(parts, imagePart(url))
			}
		case b.Type == "thinking" && b.Thinking != nil:
			reasoning = append(reasoning, *b.Thinking)
		case b.Type == "tool_use":
			calls = append(calls, toolCall(b))
		case b.Type == "tool_result" && m.role == "user":
			out, err = userToolResult(b, out)
		case b.Type == "tool_result":
			parts = append(parts, textPart("Tool result: "+truthyStr(b.Content)))
		}
		// redacted_thinking and tool_reference blocks carry nothing vLLM
		// renders.
		if err != nil {
			return nil, err
		}
	}
	if reasoning != nil {
		msg = append(msg, member{"reasoning", strings.Join(reasoning, "")})
	}
	if calls != nil {
		msg = append(msg, member{"tool_calls", calls})
	}
	switch {
	case len(parts) == 1 && parts[0].(object)[0].val == "text":
		msg = append(msg, member{"content", parts[0].(object)[1].val})
	case len(parts) > 0:
		msg = append(msg, member{"content", parts})
	}
	if m.role == "user" && len(parts) == 0 {
		return out, nil // no "content" key: vLLM drops the message
	}
	return append(out, msg), nil
}

func textPart(text string) object { return object{{"type", "text"}, {"text", text}} }

func imagePart(url string) object {
	return object{{"type", "image_url"}, {"image_url", object{{"url", url}}}}
}

// toolCall is a tool_use block as an OpenAI tool call; its input (or {})
// becomes the arguments string as Python's json.dumps prints it.
func toolCall(b block) object {
	name := ""
	if b.Name != nil {
		name = *b.Name
	}
	var args strings.Builder
	input, err := decodeOrdered(b.Input)
	if isNull(b.Input) || err != nil {
		input = object{}
	}
	pyDumps(&args, input)
	return object{
		{"id", toolCallID(b)},
		{"type", "function"},
		{"function", object{{"name", name}, {"arguments", args.String()}}},
	}
}

// imageURL is an image source as a URL: a "url" source's url, else a data
// URI from media_type (default image/jpeg) and data.
func imageURL(source json.RawMessage) (string, error) {
	var s map[string]json.RawMessage
	_ = json.Unmarshal(source, &s)
	if string(s["type"]) == `"url"` {
		if isNull(s["url"]) {
			return "", nil
		}
		var url string
		if json.Unmarshal(s["url"], &url) != nil {
			return "", bad("an image source's url must be a string")
		}
		return url, nil
	}
	media, data := "image/jpeg", ""
	if v, ok := s["media_type"]; ok {
		media = pyStr(v)
	}
	if v, ok := s["data"]; ok {
		data = pyStr(v)
	}
	return "data:" + media + ";base64," + data, nil
}

// userToolResult appends a user's tool_result as vLLM does: a tool message
// with the text items joined by "\n" (or the string content), then a user
// message with the result's images, then a tool message with its
// tool_reference items.
func userToolResult(b block, out []any) ([]any, error) {
	id := ""
	if b.ToolUseID != nil {
		id = *b.ToolUseID
	}
	text, images, refs, err := toolResultItems(b.Content)
	if err != nil {
		return nil, err
	}
	out = append(out, object{{"role", "tool"}, {"tool_call_id", id}, {"content", text}})
	if len(images) > 0 {
		parts := make([]any, len(images))
		for i, url := range images {
			parts[i] = imagePart(url)
		}
		out = append(out, object{{"role", "user"}, {"content", parts}})
	}
	if len(refs) > 0 {
		out = append(out, object{{"role", "tool"}, {"tool_call_id", id}, {"content", refs}})
	}
	return out, nil
}

func toolResultItems(content json.RawMessage) (text string, images []string, refs []any, err error) {
	if isNull(content) {
		return "", nil, nil, nil
	}
	if json.Unmarshal(content, &text) == nil {
		return text, nil, nil, nil
	}
	var items []map[string]json.RawMessage
	_ = json.Unmarshal(content, &items)
	var texts []string
	for _, it := range items {
		switch string(it["type"]) {
		case `"text"`:
			var t string
			if !isNull(it["text"]) && json.Unmarshal(it["text"], &t) != nil {
				return "", nil, nil, bad("a tool_result's text item must hold a string")
			}
			texts = append(texts, t)
		case `"image"`:
			src := it["source"]
			if isNull(src) || !isObject(src) {
				src = json.RawMessage("{}")
			}
			url, err := imageURL(src)
			if err != nil {
				return "", nil, nil, err
			}
			if url != "" {
				images = append(images, url)
			}
		case `"tool_reference"`:
			if name := refName(it); name != "" {
				refs = append(refs, object{{"type", "tool_reference"}, {"name", name}})
			}
		}
	}
	return strings.Join(texts, "\n"), images, refs, nil
}

// refName is a tool_reference item's tool_name, else its name.
func refName(item map[string]json.RawMessage) string {
	for _, k := range []string{"tool_name", "name"} {
		var s string
		if json.Unmarshal(item[k], &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// pyStr is Python's str() of a JSON value, as an f-string prints it.
func pyStr(raw json.RawMessage) string {
	v, err := decodeOrdered(raw)
	if err != nil {
		return ""
	}
	if t, ok := v.(string); ok {
		return t
	}
	var b strings.Builder
	pyRepr(&b, v)
	return b.String()
}

// truthyStr is vLLM's `str(x) if x else ""` for a block's content (a
// string, a list or null).
func truthyStr(raw json.RawMessage) string {
	v, err := decodeOrdered(raw)
	if err != nil {
		return ""
	}
	switch t := v.(type) {
	case nil:
		return ""
	case []any:
		if len(t) == 0 {
			return ""
		}
	}
	return pyStr(raw)
}

// nonEmptyObject is Python's truth value of a dict field.
func nonEmptyObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && len(m) > 0
}
