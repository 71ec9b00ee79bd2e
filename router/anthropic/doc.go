// Package anthropic reads Anthropic Messages API requests (/v1/messages and
// /v1/messages/count_tokens) as vLLM's Anthropic bridge reads them, and
// writes Anthropic-shaped errors.
//
// vLLM serves the Messages API by converting each request to a chat
// completion and running its chat path, so the prompt a replica caches is
// the chat rendering of that converted request. ChatBody builds the same
// chat-completions body, which the router keys with its chat-template path
// (router/openai, router/chattemplate) and vllm-sim serves with its own chat
// path: both then see the prompt tokens vLLM computes. Usage reads the
// token counts an answer reports, so rate limits charge what the API says.
//
// Both the router gateway and vllm-sim import it, so it is a leaf: standard
// library and router/openai only; it must not import gin, the gateway or
// the simulator.
package anthropic
