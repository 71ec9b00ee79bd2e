// Package workload builds benchmark workloads as lists of requests, each
// fully determined by the options and a seed: multi-turn chat, shared-prefix
// groups, sibling bursts and Mooncake trace replay, with open-loop Poisson
// arrivals at a target rate.
//
// Prompts are made of space-led words whose every token is three bytes under
// cmd/vllm-sim/simtokenizer, the tokenizer vllm-sim uses without a tokenizer
// file, so the package knows each prompt's token ids exactly (Request.Tokens)
// and a trace's block of N tokens is exactly N tokens long wherever it sits.
//
// It imports cmd/vllm-sim/simtokenizer and cmd/llmgw/internal/bench/trace only; it sends
// nothing (cmd/llmgw/internal/bench/client does).
package workload
