package chattemplate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// ErrMultimodal marks a message part (image, audio, video, embeddings) whose
// placeholder tokens only the model's multimodal processor knows: the
// router cannot reproduce the replica's token ids for such a prompt, so
// callers route it approximately instead of rejecting it.
var ErrMultimodal = errors.New("multimodal content")

// contentFormat is how message content reaches the template: "string"
// (text parts joined by a newline) or "openai" (a list of parts), chosen as
// vLLM does by whether the template loops over message content.
type contentFormat int

const (
	stringContent contentFormat = iota
	openaiContent
)

// normaliseMessages turns the request's messages into the conversation
// vLLM hands to the template (vLLM: chat_utils.parse_chat_messages).
func normaliseMessages(raw []byte, format contentFormat) (jinja.Value, error) {
	v, err := decodeValue(raw)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("messages: %w", err)
	}
	return eachItem(v, "messages", func(m jinja.Value) (jinja.Value, error) {
		nm, err := normaliseMessage(m, format)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf(".%w", err)
		}
		return nm, nil
	})
}

// eachItem rebuilds the array v item by item with fn. The error of a
// failing item names it as field[i] followed by fn's error, which starts
// where the path goes on (".function: ...", ": want an object").
func eachItem(v jinja.Value, field string, fn func(jinja.Value) (jinja.Value, error)) (jinja.Value, error) {
	if !v.IsList() {
		return jinja.Undefined(), fmt.Errorf("%s: want an array", field)
	}
	out := make([]jinja.Value, 0, v.AsList().Len())
	for i, item := range v.AsList().Items {
		n, err := fn(item)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("%s[%d]%w", field, i, err)
		}
		out = append(out, n)
	}
	return jinja.NewList(out), nil
}

// normaliseMessage keeps what vLLM's _parse_chat_message_content keeps, in
// its key order: role and content; for assistants tool_calls (arguments
// parsed, an empty list dropped) and reasoning (also as reasoning_content);
// for tools tool_call_id; name and task when they are strings; for
// developers tools (null when absent). Every other field is dropped.
func normaliseMessage(m jinja.Value, format contentFormat) (jinja.Value, error) {
	if !m.IsDict() {
		return jinja.Undefined(), fmt.Errorf("role: the message is not an object")
	}
	src := m.AsDict()
	role, ok := src.Get("role")
	if !ok || !role.IsString() {
		return jinja.Undefined(), fmt.Errorf("role: want a string")
	}
	content, err := normaliseContent(src, format)
	if err != nil {
		return jinja.Undefined(), err
	}
	out := jinja.NewDict()
	d := out.AsDict()
	d.Set("role", role)
	d.Set("content", content)
	switch role.AsString() {
	case "assistant":
		if err := assistantFields(src, d); err != nil {
			return jinja.Undefined(), err
		}
	case "tool":
		if v, ok := src.Get("tool_call_id"); ok {
			d.Set("tool_call_id", v)
		}
		if format == openaiContent {
			d.Set("content", toolContent(content))
		}
	}
	for _, k := range []string{"name", "task"} {
		if v, ok := src.Get(k); ok && v.IsString() {
			d.Set(k, v)
		}
	}
	if role.AsString() == "developer" {
		tools, err := developerTools(getOrNone(src, "tools"))
		if err != nil {
			return jinja.Undefined(), err
		}
		d.Set("tools", tools)
	}
	return out, nil
}

// assistantFields copies an assistant's tool_calls and reasoning. The
// deprecated reasoning_content stands in for reasoning when that is absent
// or null, as vLLM's request validator renames it.
func assistantFields(src, d *jinja.Dict) error {
	if v, ok := src.Get("tool_calls"); ok && !v.IsNone() {
		calls, err := normaliseToolCalls(v)
		if err != nil {
			return err
		}
		if calls.AsList().Len() > 0 {
			d.Set("tool_calls", calls)
		}
	}
	reasoning, ok := src.Get("reasoning")
	if !ok || reasoning.IsNone() {
		reasoning, ok = src.Get("reasoning_content")
	}
	if ok && !reasoning.IsNone() {
		if !reasoning.IsString() {
			return fmt.Errorf("reasoning: want a string")
		}
		d.Set("reasoning", reasoning)
		d.Set("reasoning_content", reasoning)
	}
	return nil
}

// toolContent turns a tool message's list of text parts back into one
// string (joined by newlines), as vLLM does because most templates print
// tool results as strings; a list holding anything but text stays a list.
func toolContent(c jinja.Value) jinja.Value {
	if !c.IsList() {
		return c
	}
	var texts []string
	for _, p := range c.AsList().Items {
		typ, _ := p.AsDict().Get("type")
		if !typ.IsString() || typ.AsString() != "text" {
			return c
		}
		t, _ := p.AsDict().Get("text")
		texts = append(texts, t.AsString())
	}
	return jinja.NewString(strings.Join(texts, "\n"))
}

// normaliseContent reads null, a string (one text part) or a list of parts,
// and returns them joined by newlines (string format) or as a list of
// {"type": "text", "text": ...} and {"type": "tool_reference", ...} parts
// (openai format).
//
// vLLM keeps a part only when its parsed result is truthy. In the string
// format that result is the part's text, so an empty text (a bare "", a
// text, refusal or thinking part with "", a tool_reference named "") is
// dropped before the join: [A, "", B] renders "A\nB", not "A\n\nB". In
// the openai format the result is a non-empty dict, so empty parts stay.
func normaliseContent(src *jinja.Dict, format contentFormat) (jinja.Value, error) {
	c, ok := src.Get("content")
	var items []jinja.Value
	switch {
	case !ok || c.IsNone():
	case c.IsString():
		items = []jinja.Value{c}
	case c.IsList():
		items = c.AsList().Items
	default:
		return jinja.Undefined(), fmt.Errorf("content: want a string, an array of parts or null")
	}
	var texts []string
	parts := make([]jinja.Value, 0, len(items))
	for i, p := range items {
		typ, text, err := contentPart(p)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("content[%d]%w", i, err)
		}
		switch {
		case typ == "":
			continue // a text or refusal part with null text: vLLM skips it
		case format == stringContent:
			if text == "" {
				continue // falsy: vLLM drops it before joining
			}
			texts = append(texts, text)
		default:
			parts = append(parts, partDict(typ, text))
		}
	}
	if format == stringContent {
		return jinja.NewString(strings.Join(texts, "\n")), nil
	}
	return jinja.NewList(parts), nil
}

func partDict(typ, text string) jinja.Value {
	p := jinja.NewDict()
	p.AsDict().Set("type", jinja.NewString(typ))
	if typ == "tool_reference" {
		p.AsDict().Set("name", jinja.NewString(text))
	} else {
		p.AsDict().Set("text", jinja.NewString(text))
	}
	return p
}

// textFields maps the part types vLLM reads as text to the field holding
// the text (vLLM: chat_utils.MM_PARSER_MAP).
var textFields = map[string]string{
	"text": "text", "input_text": "text", "output_text": "text",
	"refusal": "refusal", "thinking": "thinking", "tool_reference": "name",
}

// mediaTypes are the part types that carry media; mediaKeys the fields that
// make a part without a type (or with a uuid) a media part.
var (
	mediaTypes = map[string]bool{
		"image_url": true, "input_image": true, "image_embeds": true, "image_pil": true,
		"audio_url": true, "input_audio": true, "audio_embeds": true, "video_url": true, "prompt_embeds": true,
	}
	mediaKeys = []string{"image_url", "image_pil", "image_embeds", "audio_embeds", "prompt_embeds", "audio_url", "video_url"}
)

// contentPart reads one part the way vLLM's
// _parse_chat_message_content_mm_part does. It returns the part's type
// ("text" for every text-like type, or "tool_reference") and its text; an
// empty type means vLLM skips the part. The error text starts with the
// field path suffix.
func contentPart(p jinja.Value) (typ, text string, err error) {
	if p.IsString() {
		return "text", p.AsString(), nil
	}
	if !p.IsDict() {
		return "", "", fmt.Errorf(": want a string or an object")
	}
	d := p.AsDict()
	t, hasType := d.Get("type")
	uuid, hasUUID := d.Get("uuid")
	hasUUID = hasUUID && !uuid.IsNone()
	if !hasType || t.IsNone() || hasUUID {
		return untypedPart(d)
	}
	if !t.IsString() {
		return "", "", fmt.Errorf(".type: want a string")
	}
	name := t.AsString()
	if mediaTypes[name] {
		return "", "", fmt.Errorf(": a %q part: %w", name, ErrMultimodal)
	}
	field, ok := textFields[name]
	if !ok {
		return "", "", fmt.Errorf(".type: unsupported content part type %q", name)
	}
	v, ok := d.Get(field)
	switch {
	case (!ok || v.IsNone()) && (name == "text" || name == "refusal"):
		return "", "", nil
	case !ok || !v.IsString():
		return "", "", fmt.Errorf(".%s: want a string", field)
	case name == "tool_reference":
		return "tool_reference", v.AsString(), nil
	}
	return "text", v.AsString(), nil
}

// untypedPart reads a part without a type (or with a uuid): vLLM finds its
// kind from the fields it has.
func untypedPart(d *jinja.Dict) (typ, text string, err error) {
	for _, k := range mediaKeys {
		if d.Has(k) {
			return "", "", fmt.Errorf(": a %q part: %w", k, ErrMultimodal)
		}
	}
	if v, ok := d.Get("input_audio"); ok && !v.IsNone() {
		return "", "", fmt.Errorf(": an \"input_audio\" part: %w", ErrMultimodal)
	}
	if d.Has("tool_reference") {
		if v, ok := d.Get("name"); ok && v.IsString() {
			return "tool_reference", v.AsString(), nil
		}
		return "", "", fmt.Errorf(".name: want a string")
	}
	return "", "", fmt.Errorf(".type: missing, and the part has no media field")
}
