// Package harmony renders gpt-oss chat requests as vLLM does: with the
// Harmony format (the openai_harmony library), not the model's Jinja chat
// template. vLLM picks Harmony for every model whose Hugging Face config
// has model_type "gpt_oss"; the Jinja template in the same repository
// renders a different prompt, so keying gpt-oss with it matches nothing.
//
// The router renders Harmony itself rather than asking the engine: vLLM's
// /tokenize renders chat messages with the Jinja template even for
// gpt-oss, so engine tokenization cannot reproduce the chat path, and a
// local render costs no round trip. RenderChat turns a chat request body
// into the prompt text (special tokens written literally, as the gpt-oss
// tokenizer.json recognises them), mirroring vLLM's chat path:
//
//   - a leading system or developer message becomes the developer
//     message's "# Instructions" (the system message's identity with
//     Options.SystemInstructions, vLLM's
//     VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS);
//   - the system message carries the model identity, knowledge cutoff,
//     "Current date: YYYY-MM-DD", "Reasoning: low|medium|high" from
//     reasoning_effort (medium when absent) and the valid channels;
//   - function tools become a TypeScript-like "namespace functions" in
//     the developer message;
//   - assistant reasoning, tool calls and tool results become analysis,
//     commentary and tool messages, and analysis that an assistant final
//     answer has superseded is dropped, as vLLM and the library drop it.
//
// The date is the one thing the router cannot read from the request: vLLM
// writes the engine's local date when the request arrives. Options.Date is
// the router's guess (its clock, in UTC, unless pinned to the engines'
// VLLM_SYSTEM_START_DATE). Around midnight a request can be rendered on
// either side of the date change; it then misses the cache once, exactly
// as it would on the engine, whose every prompt changes at midnight too.
//
// What the router cannot reproduce with certainty (a system or developer
// message after the first, text that spells a special token, an unknown
// reasoning_effort or tool type, a tool without a description, which vLLM
// versions treat differently or reject) is ErrUnsupported: the caller keys
// such a request approximately rather than with keys it cannot vouch for.
//
// The specification is openai/harmony (docs/format.md, src/encoding.rs and
// its test-data); vLLM's use of it is cited in docs/VLLM_PARITY.md. The
// package imports only the standard library.
package harmony
