// Package enginetok tokenizes prompts on a model's engines: it POSTs the
// request's prompt to a ready replica's vLLM /tokenize endpoint and returns
// the token ids, for router/prompt to key (it implements prompt.Remote).
//
// A model configured with engine_tokenize (or sim, for vllm-sim fleets)
// uses it, so the router keys prompts exactly with no tokenizer files of
// its own, and the simulator's tokenizer stays out of the router binary.
// It costs one round trip per request before scheduling; a local
// tokenizer_dir is preferred in production.
//
// The request follows vLLM's TokenizeCompletionRequest {model, prompt,
// add_special_tokens} and TokenizeChatRequest {model, messages,
// add_generation_prompt, continue_final_message, add_special_tokens, plus
// the client's tools, chat_template and chat_template_kwargs}; the
// request's documents and reasoning_effort, which TokenizeChatRequest has
// no field for, go in chat_template_kwargs as vLLM's chat path merges them
// (with enable_thinking), so the template renders what the chat
// completion would. The response is TokenizeResponse {count,
// max_model_len, tokens}. Each call is
// bounded: a timeout, a response body cap and a check of the ids (see
// ParseResponse). The model's engine key goes along as on proxied requests.
// A failure is an error for the caller, which routes the request
// approximately; failures are counted (llmgw_engine_tokenize_total) and
// logged when a model starts and stops failing.
//
// It imports router/openai and router/replicas for their types, hclog and
// Prometheus; nothing of the simulator.
package enginetok
