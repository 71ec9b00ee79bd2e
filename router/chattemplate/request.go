package chattemplate

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Request is the part of an OpenAI chat request that shapes the prompt.
// Messages, Tools and Kwargs stay raw JSON so that key order survives until
// rendering.
type Request struct {
	Messages             json.RawMessage // array of OpenAI messages
	Tools                json.RawMessage // array of tools, or empty
	AddGenerationPrompt  bool
	ContinueFinalMessage bool
	Kwargs               json.RawMessage // chat_template_kwargs object, or empty
}

// ParseRequest reads the prompt-shaping fields of a /v1/chat/completions
// body. add_generation_prompt defaults to true, as in vLLM.
func ParseRequest(body []byte) (Request, error) {
	var r struct {
		Messages             json.RawMessage `json:"messages"`
		Tools                json.RawMessage `json:"tools"`
		AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
		ContinueFinalMessage bool            `json:"continue_final_message"`
		Kwargs               json.RawMessage `json:"chat_template_kwargs"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return Request{}, fmt.Errorf("chat request: %w", err)
	}
	if len(r.Messages) == 0 {
		return Request{}, fmt.Errorf("chat request: messages is required")
	}
	req := Request{Messages: r.Messages, Tools: r.Tools, AddGenerationPrompt: true,
		ContinueFinalMessage: r.ContinueFinalMessage, Kwargs: r.Kwargs}
	if r.AddGenerationPrompt != nil {
		req.AddGenerationPrompt = *r.AddGenerationPrompt
	}
	return req, nil
}

// contentFormat is how message content reaches the template: "string"
// (text parts joined by a newline) or "openai" (a list of parts), chosen as
// vLLM does by whether the template loops over message content.
type contentFormat int

const (
	stringContent contentFormat = iota
	openaiContent
)

// normaliseMessages applies vLLM's message normalisation.
func normaliseMessages(raw json.RawMessage, format contentFormat) (jinja.Value, error) {
	v, err := decodeValue(raw)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("messages: %w", err)
	}
	if !v.IsList() {
		return jinja.Undefined(), fmt.Errorf("messages: want an array")
	}
	out := make([]jinja.Value, 0, v.AsList().Len())
	for i, m := range v.AsList().Items {
		nm, err := normaliseMessage(m, format)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("messages[%d]: %w", i, err)
		}
		out = append(out, nm)
	}
	return jinja.NewList(out), nil
}

func normaliseMessage(m jinja.Value, format contentFormat) (jinja.Value, error) {
	if !m.IsDict() {
		return jinja.Undefined(), fmt.Errorf("want an object")
	}
	src := m.AsDict()
	role, ok := src.Get("role")
	if !ok || !role.IsString() {
		return jinja.Undefined(), fmt.Errorf("role: want a string")
	}
	out := jinja.NewDict()
	d := out.AsDict()
	d.Set("role", role)
	content, err := normaliseContent(src, format)
	if err != nil {
		return jinja.Undefined(), err
	}
	d.Set("content", content)
	if v, ok := src.Get("name"); ok {
		d.Set("name", v)
	}
	if v, ok := src.Get("tool_calls"); ok && !v.IsNone() {
		calls, err := normaliseToolCalls(v)
		if err != nil {
			return jinja.Undefined(), err
		}
		d.Set("tool_calls", calls)
	}
	if v, ok := src.Get("tool_call_id"); ok {
		d.Set("tool_call_id", v)
	}
	return out, nil
}

func normaliseContent(src *jinja.Dict, format contentFormat) (jinja.Value, error) {
	c, ok := src.Get("content")
	switch {
	case !ok || c.IsNone():
		if format == openaiContent {
			return jinja.NewList(nil), nil
		}
		return jinja.NewString(""), nil
	case c.IsString():
		return c, nil
	case !c.IsList():
		return jinja.Undefined(), fmt.Errorf("content: want a string or an array of parts")
	}
	var texts []string
	for i, p := range c.AsList().Items {
		if !p.IsDict() {
			return jinja.Undefined(), fmt.Errorf("content[%d]: want an object", i)
		}
		typ, _ := p.AsDict().Get("type")
		if !typ.IsString() || typ.AsString() != "text" {
			continue // images and other media do not reach a text prompt here
		}
		t, ok := p.AsDict().Get("text")
		if !ok || !t.IsString() {
			return jinja.Undefined(), fmt.Errorf("content[%d]: text part without a text string", i)
		}
		texts = append(texts, t.AsString())
	}
	if format == stringContent {
		return jinja.NewString(strings.Join(texts, "\n")), nil
	}
	parts := make([]jinja.Value, len(texts))
	for i, t := range texts {
		p := jinja.NewDict()
		p.AsDict().Set("type", jinja.NewString("text"))
		p.AsDict().Set("text", jinja.NewString(t))
		parts[i] = p
	}
	return jinja.NewList(parts), nil
}

// normaliseToolCalls parses each call's function.arguments JSON string into
// an object, as vLLM does before rendering.
func normaliseToolCalls(v jinja.Value) (jinja.Value, error) {
	if !v.IsList() {
		return jinja.Undefined(), fmt.Errorf("tool_calls: want an array")
	}
	for i, c := range v.AsList().Items {
		if !c.IsDict() {
			return jinja.Undefined(), fmt.Errorf("tool_calls[%d]: want an object", i)
		}
		fn, ok := c.AsDict().Get("function")
		if !ok || !fn.IsDict() {
			return jinja.Undefined(), fmt.Errorf("tool_calls[%d].function: want an object", i)
		}
		args, ok := fn.AsDict().Get("arguments")
		if !ok || !args.IsString() {
			continue
		}
		parsed, err := decodeValue([]byte(args.AsString()))
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("tool_calls[%d].function.arguments: %w", i, err)
		}
		fn.AsDict().Set("arguments", parsed)
	}
	return v, nil
}

// normaliseTools rebuilds each tool in the field order of vLLM's request
// models: type, function{name, description, parameters}, absent optional
// fields as null.
func normaliseTools(raw json.RawMessage) (jinja.Value, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return jinja.None(), nil
	}
	v, err := decodeValue(raw)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("tools: %w", err)
	}
	if !v.IsList() {
		return jinja.Undefined(), fmt.Errorf("tools: want an array")
	}
	if v.AsList().Len() == 0 {
		return jinja.None(), nil
	}
	out := make([]jinja.Value, 0, v.AsList().Len())
	for i, t := range v.AsList().Items {
		if !t.IsDict() {
			return jinja.Undefined(), fmt.Errorf("tools[%d]: want an object", i)
		}
		fn, ok := t.AsDict().Get("function")
		if !ok || !fn.IsDict() {
			return jinja.Undefined(), fmt.Errorf("tools[%d].function: want an object", i)
		}
		name, ok := fn.AsDict().Get("name")
		if !ok || !name.IsString() {
			return jinja.Undefined(), fmt.Errorf("tools[%d].function.name: want a string", i)
		}
		typ, ok := t.AsDict().Get("type")
		if !ok {
			typ = jinja.NewString("function")
		}
		nf := jinja.NewDict()
		nf.AsDict().Set("name", name)
		for _, k := range []string{"description", "parameters"} {
			x, ok := fn.AsDict().Get(k)
			if !ok {
				x = jinja.None()
			}
			nf.AsDict().Set(k, x)
		}
		nt := jinja.NewDict()
		nt.AsDict().Set("type", typ)
		nt.AsDict().Set("function", nf)
		out = append(out, nt)
	}
	return jinja.NewList(out), nil
}
