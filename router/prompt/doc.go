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
// (router/tokenizer and router/chattemplate), vllm-sim's deterministic
// tokenizer (cmd/vllm-sim/simtokenizer), or none. It must not import gin,
// driver/... or the HTTP API.
package prompt
