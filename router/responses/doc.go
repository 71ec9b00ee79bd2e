// Package responses reads OpenAI Responses API requests and answers for
// routing. A Responses request is keyed by its chat rendering: ChatBody
// turns it into the chat-completions body that vLLM's own conversion
// amounts to (vLLM renders a Responses request by building chat messages
// and running its chat template), so the router keys it with the same
// template path as /v1/chat/completions and the replica caches the same
// tokens. Stateless rewrites a request that continues a stored response
// for an engine that keeps no state, and ReadResult and ReadStreamEvent
// take from an engine's answer what the router stores.
//
// Both the router's gateway and vllm-sim import it, so it depends on
// router/openai and the standard library only: never on gin, the gateway
// or the simulator.
package responses
