// Package workload builds benchmark workloads as lists of requests, each
// fully determined by the options and a seed: multi-turn chat, shared-prefix
// groups, sibling bursts and Mooncake trace replay, with open-loop Poisson
// arrivals at a target rate.
//
// Prompts are made of space-led words whose every token is three bytes under
// the tokenizer vllm-sim uses without a tokenizer file, so a prompt of N
// tokens is 3N bytes and a trace's block of N tokens is exactly N tokens
// long wherever it sits. The token ids themselves come from the engines
// (Request.TokenizeBody, sent by cmd/llmgw/internal/bench/client before the timed
// run), so the simulator's code is not linked into llmgw and a workload
// means the same on real engines; the tests check the three-byte rule
// against the simulator's tokenizer.
//
// It imports cmd/llmgw/internal/bench/trace only; it sends nothing
// (cmd/llmgw/internal/bench/client does).
package workload
