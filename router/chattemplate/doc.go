// Package chattemplate renders a model's chat template the way vLLM does for
// /v1/chat/completions: vLLM's message normalisation first (text parts of
// list-style content joined with a newline for templates that take string
// content, tool-call arguments parsed from their JSON strings, tools in the
// field order of vLLM's request models), then Hugging Face transformers'
// Jinja setup (trim_blocks, lstrip_blocks, a Python-compatible tojson,
// raise_exception, strftime_now, the tokenizer's special tokens).
//
// Request JSON is decoded with its key order kept, because templates print
// tools and tool calls with tojson and Python keeps the client's order.
//
// Public API:
//
//	t, err := chattemplate.Load(dir) // chat_template.jinja or tokenizer_config.json
//	req, err := chattemplate.ParseRequest(body) // an OpenAI chat request
//	prompt, err := t.Render(req)
//
// The Jinja engine is github.com/ardanlabs/jinja v1.8.0 (the newest that
// builds on Go 1.26); this package replaces its tojson with one that matches
// Python's json.dumps (see tojson.go). Golden renders from Jinja2 are in
// testdata/ and produced by `make golden`.
//
// This package is a leaf of router/: it must not import driver/..., gin or
// other router packages.
package chattemplate
