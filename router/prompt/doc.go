// Package prompt turns a parsed request into what the scheduler needs: the
// prompt's token ids (rendered with the model's chat template and encoded
// with its tokenizer, exactly as the replica will), its canonical block keys
// (internal/blockkey) at the replicas' block size, and, when the model has
// no tokenizer, keys of fixed-size text chunks for approximate routing.
//
// Each model gets an Encoder: a Hugging Face tokenizer directory
// (router/tokenizer and router/chattemplate), vllm-sim's deterministic
// tokenizer (internal/simtokenizer), or none. It must not import gin,
// driver/... or the HTTP API.
package prompt
