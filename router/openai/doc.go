// Package openai parses the parts of OpenAI API requests the router needs to
// route them (model, stream flag, prompt or messages, the flags that shape
// the prompt) and writes OpenAI-shaped error bodies. It never rewrites a
// request: the router forwards the client's bytes unchanged.
//
// It is a leaf of router/: standard library only; it must not import gin,
// driver/... or other router packages.
package openai
