// Package disagg is the router's side of prefill/decode disaggregated
// serving, as vLLM's NixlConnector and its disaggregated proxy examples
// drive it: a prefill replica computes a prompt's KV blocks and keeps them
// for the transfer, a decode replica pulls the blocks it does not cache
// and generates.
//
// It holds what needs no HTTP or routing: the two request bodies of the
// two-step protocol (PrefillBody, DecodeBody), the reading of the prefill
// replica's answer (ParsePrefillResponse: the kv_transfer_params a decode
// replica needs, or an error that names what is wrong with it), and the
// Threshold that decides when a decode replica caches enough of a prompt
// to prefill it itself. router/gateway routes and proxies the two steps.
//
// The decider works on cached token counts, every tier in full: a block
// held in CPU memory is pulled back by the engine's connector at a small
// fraction of a remote transfer's cost, so it is as good as a GPU block
// for this choice. Weighing tiers here (as a prefix score does) would
// undercount CPU hits and send prompts the decode replica holds to a
// prefill replica (llm-d's bug 1047).
package disagg
