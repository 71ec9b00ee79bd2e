// Package chattemplate renders a model's chat template the way vLLM does for
// /v1/chat/completions: vLLM's content-format detection and message
// normalisation first (messages.go), its tools dump (tools.go) and its
// merge of chat_template_kwargs with the request's fields (kwargs.go), then
// Hugging Face transformers' Jinja setup (trim_blocks, lstrip_blocks, a
// Python-compatible tojson, raise_exception, strftime_now, the tokenizer's
// special tokens). Requests vLLM refuses are errors naming the field; media
// parts are ErrMultimodal (the router cannot reproduce their tokens).
//
// It follows vLLM's main line as read from its source in 2026 (no release
// tag could be checked out here; each file is pinned by the commit of the
// version read): vllm/entrypoints/chat_utils.py @ 001eadcf295d,
// vllm/renderers/hf.py @ e7ad92e5308e, vllm/renderers/params.py @
// 017638d70159, vllm/renderers/online_renderer.py @ 01063cd07bef,
// vllm/entrypoints/openai/chat_completion/protocol.py @ 002032ee2b18.
// docs/VLLM_PARITY.md lists each behaviour, where vLLM and this package
// implement it, and the test that pins it.
//
// Request JSON is decoded with its key order kept, because templates print
// tools, tool calls and their arguments with tojson: Python keeps the
// client's order except where vLLM's request validation rebuilds a dict in
// declared order (tools, tool calls), which this package reproduces.
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
