// Package simencoder is vllm-sim's built-in tokenizer and ChatML template
// (cmd/vllm-sim/simtokenizer) as a router/prompt Encoder. It is test support:
// tests that build a router in process inject it (prompt.Source.Encoder,
// router/server.WithEncoder) to key sim models exactly without asking an
// engine.
//
// No production binary may import it. The router tokenizes a sim model on
// its engines instead (router/enginetok), so simulator code stays off the
// request path; internal/tests/layering fails when llmgw-router or llmgw links
// this package or cmd/vllm-sim/simtokenizer.
//
// It imports cmd/vllm-sim/simtokenizer and router/openai only, not
// router/prompt: the Encoder interface is satisfied structurally.
package simencoder

import (
	"github.com/llmgw/llmgw/cmd/vllm-sim/simtokenizer"
	"github.com/llmgw/llmgw/router/openai"
)

// Encoder renders and encodes prompts exactly as vllm-sim without a
// tokenizer file does. The zero value is ready to use.
type Encoder struct{}

// Encode returns text's token ids, with the BOS id first when addSpecial.
func (Encoder) Encode(text string, addSpecial bool) []uint32 {
	return simtokenizer.Tokenizer{}.Encode(text, addSpecial)
}

// RenderChat renders r's messages with vllm-sim's ChatML template.
func (Encoder) RenderChat(r *openai.Request) (string, error) {
	m := make([]simtokenizer.Message, len(r.Messages))
	for i, msg := range r.Messages {
		m[i] = simtokenizer.Message{Role: msg.Role, Content: msg.Content}
	}
	return simtokenizer.RenderChat(m, r.AddGenerationPrompt, r.ContinueFinal), nil
}
