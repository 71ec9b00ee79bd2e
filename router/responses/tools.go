package responses

import (
	"bytes"
	"encoding/json"
)

// rawTool holds the fields of a Responses tool the conversion reads.
type rawTool struct {
	Type  json.RawMessage `json:"type"`
	Name  json.RawMessage `json:"name"`
	Tools json.RawMessage `json:"tools"`
}

// checkTools refuses tools vLLM's request validation refuses among the
// kinds it renders: a tool is an object with a string type; a function
// tool (alone or inside a namespace tool) has a string name, and its
// description, parameters and strict have the right types when given.
func checkTools(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return bad("tools must be an array of tools")
	}
	for i, t := range tools {
		field := "tools[" + itoa(i) + "]"
		typ, err := toolType(t, field)
		if err != nil {
			return err
		}
		switch typ {
		case "function":
			err = checkFunction(t, field)
		case "namespace":
			err = checkNamespace(t, field)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func toolType(t json.RawMessage, field string) (string, error) {
	var rt rawTool
	if err := json.Unmarshal(t, &rt); err != nil {
		return "", bad("%s must be an object", field)
	}
	var typ string
	if err := json.Unmarshal(rt.Type, &typ); err != nil {
		return "", bad("%s.type must be a string", field)
	}
	return typ, nil
}

func checkFunction(t json.RawMessage, field string) error {
	var f struct {
		Name        *string         `json:"name"`
		Description *string         `json:"description"`
		Parameters  *map[string]any `json:"parameters"`
		Strict      *bool           `json:"strict"`
	}
	if err := json.Unmarshal(t, &f); err != nil {
		return bad("%s: description must be a string, parameters an object, strict a boolean", field)
	}
	if f.Name == nil {
		return bad("%s.name must be a string", field)
	}
	return nil
}

func checkNamespace(t json.RawMessage, field string) error {
	var ns struct {
		Name  *string           `json:"name"`
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(t, &ns); err != nil || ns.Name == nil {
		return bad("%s: a namespace tool needs a string name and an array of tools", field)
	}
	for j, sub := range ns.Tools {
		subField := field + ".tools[" + itoa(j) + "]"
		typ, err := toolType(sub, subField)
		if err != nil {
			return err
		}
		if typ == "function" {
			if err := checkFunction(sub, subField); err != nil {
				return err
			}
		}
	}
	return nil
}

// functionTools lists r's function tools as vLLM's construct_tool_dicts
// hands them to the chat template, in the chat-completions shape
// {"type":"function","function":{...}}: each function tool, and each
// function inside a namespace tool with its name flattened to
// namespace__name (iter_response_function_tool_dicts); other tool kinds
// are not rendered. The function object holds the tool's fields but type,
// strict always present (null when unset: the OpenAI model dumps it), so
// that the chat template path's normalisation prints what vLLM's
// FunctionDefinition.model_dump() prints.
func (r *Request) functionTools() ([]json.RawMessage, error) {
	var tools []json.RawMessage
	if err := json.Unmarshal(r.tools, &tools); err != nil {
		return nil, bad("tools must be an array of tools")
	}
	var out []json.RawMessage
	for _, t := range tools {
		var rt rawTool
		_ = json.Unmarshal(t, &rt)
		var typ string
		_ = json.Unmarshal(rt.Type, &typ)
		switch typ {
		case "function":
			out = append(out, chatTool(t, ""))
		case "namespace":
			var ns, subs = "", []json.RawMessage(nil)
			_ = json.Unmarshal(rt.Name, &ns)
			_ = json.Unmarshal(rt.Tools, &subs)
			for _, sub := range subs {
				var st rawTool
				var subType string
				_ = json.Unmarshal(sub, &st)
				_ = json.Unmarshal(st.Type, &subType)
				if subType == "function" {
					out = append(out, chatTool(sub, ns))
				}
			}
		}
	}
	return out, nil
}

// chatTool wraps a Responses function tool as a chat tool; namespace, when
// set, prefixes the name.
func chatTool(t json.RawMessage, namespace string) json.RawMessage {
	fields, _ := splitObject(t)
	var fn bytes.Buffer
	fn.WriteString(`{"strict":`)
	strict := json.RawMessage("null")
	for _, f := range fields {
		if f.key == "strict" {
			strict = f.value
		}
	}
	fn.Write(strict)
	for _, f := range fields {
		switch f.key {
		case "type", "strict":
			continue
		case "name":
			if namespace != "" {
				var name string
				_ = json.Unmarshal(f.value, &name)
				fn.WriteString(`,"name":`)
				writeJSON(&fn, namespace+namespaceSeparator+name)
				continue
			}
		}
		fn.WriteByte(',')
		writeJSON(&fn, f.key)
		fn.WriteByte(':')
		fn.Write(f.value)
	}
	fn.WriteByte('}')
	var b bytes.Buffer
	b.WriteString(`{"type":"function","function":`)
	b.Write(fn.Bytes())
	b.WriteByte('}')
	return b.Bytes()
}

// writeTools writes the tools and tool_choice fields of the chat body. It
// reports whether vLLM renders an empty tool list: tools given, none of
// them a function (construct_tool_dicts returns [] then, not None). A chat
// request cannot carry that in tools, so ChatBody passes it through
// chat_template_kwargs, which hands the template its tools unnormalised.
func (r *Request) writeTools(b *bytes.Buffer) (empty bool, err error) {
	if isNull(r.tools) {
		return false, nil
	}
	tools, err := r.functionTools()
	if err != nil {
		return false, err
	}
	var given []json.RawMessage
	_ = json.Unmarshal(r.tools, &given)
	if len(given) == 0 {
		return false, nil
	}
	empty = len(tools) == 0
	if !empty {
		b.WriteString(`,"tools":`)
		writeJSON(b, tools)
	}
	if choice := chatToolChoice(r.toolChoice); choice != nil {
		b.WriteString(`,"tool_choice":`)
		b.Write(choice)
	}
	return empty, nil
}

// chatToolChoice converts tool_choice to the chat shape: the modes pass
// through and {"type":"function","name":n} becomes
// {"type":"function","function":{"name":n}}; other forms (allowed tools,
// hosted tools) have no chat equivalent and are dropped. The chat template
// path does not read tool_choice, so this never changes the prompt.
func chatToolChoice(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		return raw
	}
	var fn struct {
		Type string  `json:"type"`
		Name *string `json:"name"`
	}
	if json.Unmarshal(raw, &fn) != nil || fn.Type != "function" || fn.Name == nil {
		return nil
	}
	var b bytes.Buffer
	b.WriteString(`{"type":"function","function":{"name":`)
	writeJSON(&b, *fn.Name)
	b.WriteString(`}}`)
	return b.Bytes()
}
