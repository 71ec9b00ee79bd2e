// Package sdk runs real, unmodified client SDKs against llmgw-router in
// front of vllm-sim: OpenAI's Go client here, and Node scripts
// (testdata/*.mjs) for the Vercel AI SDK, OpenAI's and Anthropic's Node
// clients and LangChain. Two router processes share one Consul agent,
// static replicas and peer sharing, so that a previous_response_id chain
// can hop between them.
//
// Each check names the endpoints it needs; one the router answers with
// "no such endpoint" (or vllm-sim with its mux's plain 404) skips with
// the endpoint's name, so the suite passes before every API lands and
// exercises each one as soon as it does.
//
// The Node SDKs come from `make sdk-node` (mk/sdk.mk), found through
// LLMGW_SDK_NODE, which `make test` sets. It has no non-test code and
// nothing may import it.
package sdk
