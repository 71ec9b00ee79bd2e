// Package prompt turns a parsed request into what the scheduler needs: the
// prompt's token ids (rendered with the model's chat template and encoded
// with its tokenizer, exactly as the replica will), its canonical block keys
// (internal/blockkey) at the replicas' block size, and, when the model has
// no tokenizer, keys of fixed-size text chunks for approximate routing.
// Chat prompts carrying media (images, audio, video, embeddings) are keyed
// approximately too: their placeholder tokens come from the model's
// multimodal processor, which the router does not have. Token ids are cut
// as vLLM cuts them for truncate_prompt_tokens before they are keyed.
//
// Each model gets an Encoder: a Hugging Face tokenizer directory
// (router/tokenizer and router/chattemplate), one injected by a custom
// build or a test (cmd/vllm-sim/simencoder wraps vllm-sim's tokenizer for
// tests), or none. A model without one may tokenize on its engines through
// a Remote (router/enginetok: one /tokenize round trip per request), else
// it is keyed approximately. It must not import gin, driver/..., the HTTP
// API or simulator code.
package prompt
