package chattemplate

import (
	"fmt"
	"slices"

	"github.com/ardanlabs/jinja"
)

// normaliseToolCalls rebuilds an assistant's tool calls as vLLM hands them
// to the template. vLLM's request model validates each call against
// OpenAI's ChatCompletionMessageFunctionToolCallParam, which rebuilds it in
// declaration order, {id, function: {arguments, name, ...}, type, ...},
// other fields kept after the declared ones (the request model allows
// extra fields), and refuses a call missing one of those four. Then
// vLLM's _postprocess_messages parses arguments: a string that is not
// valid JSON becomes an empty object.
func normaliseToolCalls(v jinja.Value) (jinja.Value, error) {
	return eachItem(v, "tool_calls", normaliseToolCall)
}

func normaliseToolCall(c jinja.Value) (jinja.Value, error) {
	if !c.IsDict() {
		return jinja.Undefined(), fmt.Errorf(": want an object")
	}
	src := c.AsDict()
	if id, ok := src.Get("id"); !ok || !id.IsString() {
		return jinja.Undefined(), fmt.Errorf(".id: want a string")
	}
	if typ, ok := src.Get("type"); !ok || !typ.IsString() || typ.AsString() != "function" {
		return jinja.Undefined(), fmt.Errorf(`.type: want "function"`)
	}
	fn, ok := src.Get("function")
	if !ok || !fn.IsDict() {
		return jinja.Undefined(), fmt.Errorf(".function: want an object")
	}
	for _, k := range []string{"arguments", "name"} {
		if x, ok := fn.AsDict().Get(k); !ok || !x.IsString() {
			return jinja.Undefined(), fmt.Errorf(".function.%s: want a string", k)
		}
	}
	nf := reordered(fn.AsDict(), "arguments", "name")
	args, _ := nf.AsDict().Get("arguments")
	parsed, err := decodeValue([]byte(args.AsString()))
	if err != nil {
		parsed = jinja.NewDict()
	}
	nf.AsDict().Set("arguments", parsed)
	call := reordered(src, "id", "function", "type")
	call.AsDict().Set("function", nf)
	return call, nil
}

// developerTools reshapes a developer message's tools as the request
// validation leaves them: each checked against OpenAI's
// ChatCompletionFunctionToolParam, {function: {name, description,
// parameters, strict, ...}, type, ...} (optional fields only when given).
func developerTools(v jinja.Value) (jinja.Value, error) {
	if v.IsNone() {
		return v, nil
	}
	return eachItem(v, "tools", developerTool)
}

func developerTool(t jinja.Value) (jinja.Value, error) {
	if !t.IsDict() {
		return jinja.Undefined(), fmt.Errorf(": want an object")
	}
	if typ, ok := t.AsDict().Get("type"); !ok || !typ.IsString() || typ.AsString() != "function" {
		return jinja.Undefined(), fmt.Errorf(`.type: want "function"`)
	}
	fn, ok := t.AsDict().Get("function")
	if !ok || !fn.IsDict() {
		return jinja.Undefined(), fmt.Errorf(".function: want an object")
	}
	if name, ok := fn.AsDict().Get("name"); !ok || !name.IsString() {
		return jinja.Undefined(), fmt.Errorf(".function.name: want a string")
	}
	nt := reordered(t.AsDict(), "function", "type")
	nt.AsDict().Set("function", reordered(fn.AsDict(), "name", "description", "parameters", "strict"))
	return nt, nil
}

// reordered copies d with the given keys first, in that order (those d
// has), then d's other keys in d's order: what pydantic makes of a dict it
// validates against a TypedDict declaring those keys, extra keys allowed.
func reordered(d *jinja.Dict, first ...string) jinja.Value {
	out := jinja.NewDict()
	for _, k := range first {
		if v, ok := d.Get(k); ok {
			out.AsDict().Set(k, v)
		}
	}
	for _, k := range d.Keys {
		if !slices.Contains(first, k) {
			out.AsDict().Set(k, getOrNone(d, k))
		}
	}
	return out
}

// normaliseTools rebuilds the request's tools as vLLM's
// ChatCompletionToolsParam.model_dump() prints them: {"type", "function":
// {"name", "description", "parameters", "defer_loading" when set, then any
// other function fields in the client's order}, "defer_loading" when set}.
// Absent description and parameters are null; other top-level fields are
// dropped. No tools (absent or null) is None.
func normaliseTools(raw []byte) (jinja.Value, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return jinja.None(), nil
	}
	v, err := decodeValue(raw)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("tools: %w", err)
	}
	if v.IsList() && v.AsList().Len() == 0 {
		return jinja.Undefined(), errEmptyTools
	}
	return eachItem(v, "tools", normaliseTool)
}

var errEmptyTools = fmt.Errorf("tools: must not be an empty array; provide at least one tool or omit the field")

func normaliseTool(t jinja.Value) (jinja.Value, error) {
	if !t.IsDict() {
		return jinja.Undefined(), fmt.Errorf(": want an object")
	}
	if typ, ok := t.AsDict().Get("type"); ok && (!typ.IsString() || typ.AsString() != "function") {
		return jinja.Undefined(), fmt.Errorf(`.type: want "function"`)
	}
	fn, ok := t.AsDict().Get("function")
	if !ok || !fn.IsDict() {
		return jinja.Undefined(), fmt.Errorf(".function: want an object")
	}
	src := fn.AsDict()
	if name, ok := src.Get("name"); !ok || !name.IsString() {
		return jinja.Undefined(), fmt.Errorf(".function.name: want a string")
	}
	checks := []struct {
		key  string
		kind string
		ok   func(jinja.Value) bool
	}{
		{"description", "a string", jinja.Value.IsString},
		{"parameters", "an object", jinja.Value.IsDict},
		{"defer_loading", "a boolean", jinja.Value.IsBool},
	}
	for _, c := range checks {
		x, ok := src.Get(c.key)
		if ok && !x.IsNone() && !c.ok(x) {
			return jinja.Undefined(), fmt.Errorf(".function.%s: want %s or null", c.key, c.kind)
		}
	}
	nf := jinja.NewDict()
	nf.AsDict().Set("name", getOrNone(src, "name"))
	nf.AsDict().Set("description", getOrNone(src, "description"))
	nf.AsDict().Set("parameters", getOrNone(src, "parameters"))
	deferLoading := getOrNone(t.AsDict(), "defer_loading")
	if !deferLoading.IsNone() && !deferLoading.IsBool() {
		return jinja.Undefined(), fmt.Errorf(".defer_loading: want a boolean or null")
	}
	fnDefer := getOrNone(src, "defer_loading")
	if fnDefer.IsNone() {
		fnDefer = deferLoading
	}
	if !fnDefer.IsNone() {
		nf.AsDict().Set("defer_loading", fnDefer)
	}
	for _, k := range src.Keys {
		switch k {
		case "name", "description", "parameters", "defer_loading":
		default:
			nf.AsDict().Set(k, getOrNone(src, k))
		}
	}
	nt := jinja.NewDict()
	nt.AsDict().Set("type", jinja.NewString("function"))
	nt.AsDict().Set("function", nf)
	if !deferLoading.IsNone() {
		nt.AsDict().Set("defer_loading", deferLoading)
	}
	return nt, nil
}

func getOrNone(d *jinja.Dict, key string) jinja.Value {
	if v, ok := d.Get(key); ok {
		return v
	}
	return jinja.None()
}
