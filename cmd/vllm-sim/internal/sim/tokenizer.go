package sim

import (
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/server"
	"github.com/llmgw/llmgw/internal/simtokenizer"
)

// builtin adapts the shared deterministic tokenizer, which routers use too
// for simulated fleets, to the server.
type builtin struct{ simtokenizer.Tokenizer }

func (builtin) RenderChat(msgs []server.Message, addGen, continueFinal bool) (string, error) {
	m := make([]simtokenizer.Message, len(msgs))
	for i, msg := range msgs {
		m[i] = simtokenizer.Message{Role: msg.Role, Content: msg.Content}
	}
	return simtokenizer.RenderChat(m, addGen, continueFinal), nil
}

var _ server.Tokenizer = builtin{}
