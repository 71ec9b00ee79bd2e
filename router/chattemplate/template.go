package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// Template is a compiled chat template plus the tokenizer's special tokens.
// It is safe for concurrent use.
type Template struct {
	def, toolUse *compiled // toolUse is nil unless the model names one
	specials     map[string]string
	now          func() time.Time
}

type compiled struct {
	t      *jinja.Template
	format contentFormat
}

// specialKeys are the tokenizer_config.json entries transformers hands to
// every template (its special_tokens_map).
var specialKeys = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// Load reads the chat template of a model directory: chat_template.jinja if
// present, otherwise tokenizer_config.json's chat_template (a string, or a
// list of named templates: "default", and "tool_use" for requests with
// tools). Special tokens come from tokenizer_config.json.
func Load(dir string) (*Template, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load chat template: %w", err)
	}
	var cfg map[string]json.RawMessage
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, fmt.Errorf("load chat template: tokenizer_config.json: %w", err)
		}
	}
	specials := map[string]string{}
	for _, k := range specialKeys {
		if s, ok := specialContent(cfg[k]); ok {
			specials[k] = s
		}
	}
	templates := map[string]string{}
	if src, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
		templates["default"] = string(src)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load chat template: %w", err)
	} else if err := decodeTemplates(cfg["chat_template"], templates); err != nil {
		return nil, fmt.Errorf("load chat template from %s: %w", dir, err)
	}
	if templates["default"] == "" {
		return nil, fmt.Errorf("load chat template from %s: the model has no chat template", dir)
	}
	t, err := New(templates["default"], specials)
	if err != nil {
		return nil, fmt.Errorf("load chat template from %s: %w", dir, err)
	}
	if src, ok := templates["tool_use"]; ok {
		if t.toolUse, err = compile(src); err != nil {
			return nil, fmt.Errorf("load chat template from %s: tool_use: %w", dir, err)
		}
	}
	return t, nil
}

func decodeTemplates(raw json.RawMessage, dst map[string]string) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		dst["default"] = s
		return nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return fmt.Errorf("chat_template: want a string or a list of {name, template}")
	}
	for _, n := range named {
		dst[n.Name] = n.Template
	}
	return nil
}

func specialContent(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil && len(raw) > 0 && raw[0] == '"' {
		return s, true
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Content != nil {
		return *obj.Content, true
	}
	return "", false
}

// New compiles a template source; specials maps names such as bos_token to
// their text.
func New(source string, specials map[string]string) (*Template, error) {
	c, err := compile(source)
	if err != nil {
		return nil, err
	}
	sp := make(map[string]string, len(specials))
	for k, v := range specials {
		sp[k] = v
	}
	return &Template{def: c, specials: sp, now: time.Now}, nil
}

func compile(source string) (*compiled, error) {
	t, err := jinja.Compile(rewriteTojson(prepareSource(source)))
	if err != nil {
		return nil, fmt.Errorf("compile chat template: %w", err)
	}
	return &compiled{t: t, format: detectFormat(source)}, nil
}

// WithClock returns a copy of t whose strftime_now reads now (for tests and
// reproducible renders).
func (t *Template) WithClock(now func() time.Time) *Template {
	c := *t
	c.now = now
	return &c
}

// Render produces the prompt text for req, ready to be tokenized without
// special tokens. An error wrapping ErrMultimodal means the request is valid
// but carries media the router cannot tokenize; any other error means vLLM
// would refuse it too.
func (t *Template) Render(req Request) (string, error) {
	if req.AddGenerationPrompt && req.ContinueFinalMessage {
		return "", ErrIncompatible
	}
	args, err := templateArgs(req)
	if err != nil {
		return "", err
	}
	c := t.def
	if t.toolUse != nil && !args.tools.IsNone() {
		c = t.toolUse
	}
	msgs, err := normaliseMessages(req.Messages, c.format)
	if err != nil {
		return "", err
	}
	data := map[string]jinja.Value{
		"messages":              msgs,
		"tools":                 args.tools,
		"documents":             args.documents,
		"add_generation_prompt": jinja.NewBool(args.addGenerationPrompt),
		"strftime_now":          jinja.NewCallable("strftime_now", t.strftimeNow),
		"range":                 jinja.NewCallable("range", boundedRange),
		tojsonName:              jinja.NewCallable("tojson", tojson),
	}
	for k, v := range t.specials {
		data[k] = jinja.NewString(v)
	}
	for _, k := range args.vars.Keys {
		data[k], _ = args.vars.Get(k)
	}
	out, err := renderSafely(c.t, data)
	if err != nil {
		return "", err
	}
	if req.ContinueFinalMessage {
		return continueFinal(out, msgs)
	}
	return out, nil
}

// maxRange bounds range(): the engine's own builds any list it is asked for.
const maxRange = 1 << 16

// boundedRange is Python's range() returning a list of at most maxRange
// items; templates only ever count messages or tools with it.
func boundedRange(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var start, stop, step int64 = 0, 0, 1
	ints := make([]int64, len(args))
	for i, a := range args {
		if !a.IsInt() {
			return jinja.Undefined(), fmt.Errorf("range: arguments must be integers")
		}
		ints[i] = a.AsInt()
	}
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return jinja.Undefined(), fmt.Errorf("range: expected 1 to 3 arguments, got %d", len(args))
	}
	if step == 0 {
		return jinja.Undefined(), fmt.Errorf("range: step must not be zero")
	}
	var items []jinja.Value
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		if len(items) == maxRange {
			return jinja.Undefined(), fmt.Errorf("range: more than %d items", maxRange)
		}
		items = append(items, jinja.NewInt(i))
	}
	return jinja.NewList(items), nil
}

// renderSafely turns a panic inside the engine into an error: one bad
// template or request must not take the router down.
func renderSafely(t *jinja.Template, data map[string]jinja.Value) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("render chat template: engine panic: %v", r)
		}
	}()
	out, err = t.RenderValues(data)
	if err != nil {
		return "", fmt.Errorf("render chat template: %w", err)
	}
	return strings.ReplaceAll(out, sentinel, ""), nil
}

// continueFinal cuts the render right after the final message's text, as
// transformers does for continue_final_message.
func continueFinal(out string, msgs jinja.Value) (string, error) {
	items := msgs.AsList().Items
	if len(items) == 0 {
		return "", fmt.Errorf("continue_final_message: no messages")
	}
	c, _ := items[len(items)-1].AsDict().Get("content")
	final := ""
	switch {
	case c.IsString():
		final = c.AsString()
	case c.IsList():
		found := false
		for i := c.AsList().Len() - 1; i >= 0 && !found; i-- {
			if p := c.AsList().Get(i); p.IsDict() {
				if t, ok := p.AsDict().Get("text"); ok && t.IsString() {
					final, found = t.AsString(), true
				}
			}
		}
		if !found {
			return "", fmt.Errorf("continue_final_message: the final message has no text part")
		}
	}
	stripped := strings.TrimFunc(final, isPySpace)
	loc := strings.LastIndex(out, stripped)
	if loc < 0 {
		return "", fmt.Errorf("continue_final_message: the final message does not appear in the rendered chat")
	}
	left := strings.TrimLeftFunc(final, isPySpace)
	if end := min(len(out), loc+len(left)); out[loc:end] == final {
		return out[:end], nil
	}
	return out[:loc+len(stripped)], nil
}

// isPySpace is Python's str.isspace for str.strip().
func isPySpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}
