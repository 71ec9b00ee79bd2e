// Package tokenizer turns text into exactly the token ids that vLLM's Hugging
// Face stack produces, so that the router's block keys match what replicas
// cache. It reads a model directory's tokenizer.json and
// tokenizer_config.json (never the network) and implements the tokenizer.json
// features the common vLLM models use: byte-level BPE (GPT-2, Llama 3,
// Qwen2/3, DeepSeek V3, gpt-oss), SentencePiece-style BPE with byte fallback
// (Llama 2, Mistral, Gemma), normalizers, Split/ByteLevel/Metaspace
// pre-tokenizers, added and special tokens, post-processors and decoders.
//
// The reference is the Rust tokenizers crate: golden files under testdata/
// were produced by it (see golden/ and `make golden`) and the tests require
// identical ids. One deliberate difference follows Python transformers, which
// vLLM uses: for Llama and Gemma tokenizer classes, tokenizer_config.json's
// add_bos_token and add_eos_token rebuild the post-processor.
//
// Public API:
//
//	tok, err := tokenizer.Load(dir)
//	ids := tok.Encode(text, addSpecialTokens)
//	text := tok.Decode(ids, skipSpecialTokens)
//	p := tokenizer.NewPrefixCache(tok, n) // multi-turn chat: encode only the new suffix
//
// A *Tokenizer is immutable after Load and safe for concurrent use.
//
// This package is a leaf of router/: it imports only the standard library,
// golang.org/x/text and github.com/dlclark/regexp2, and must not import
// driver/..., gin or any other router package.
package tokenizer
