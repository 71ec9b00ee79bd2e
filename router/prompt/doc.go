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
// Chat prompts are rendered as vLLM renders them for the model: with its
// chat template, or, for a directory whose config.json has model_type
// "gpt_oss", in the Harmony format (router/harmony), which vLLM's chat path
// uses for gpt-oss instead of the template. A directory in Mistral format
// (tekken.json, tokenizer.model.v*) is not loaded: vLLM's default
// tokenizer mode renders it with mistral_common, which the router does
// not mirror, so such a model is keyed on its engines (whose /tokenize
// renders with mistral_common too) or approximately. A gpt-oss model
// tokenized on its engines keys chat prompts approximately: /tokenize
// renders the Jinja template, not Harmony.
// A prompt an Encoder cannot vouch for (ErrApprox) is keyed approximately.
//
// Each model gets an Encoder: a Hugging Face tokenizer directory
// (router/tokenizer, router/chattemplate, router/harmony), one injected by
// a custom build or a test (cmd/vllm-sim/simencoder wraps vllm-sim's
// tokenizer for tests), or none. A model without one may tokenize on its engines through
// a Remote (router/enginetok: one /tokenize round trip per request), else
// it is keyed approximately. It must not import gin, driver/..., the HTTP
// API or simulator code.
package prompt
