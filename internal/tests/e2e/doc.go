// Package e2e holds end-to-end tests of llmgw as deployed: a real Consul
// agent, vllm-sim processes, the driver's real KV intake and forwarder
// (driver/kvevents/intake, driver/kvevents/forward) and llmgw-router (router/server). It is the one package
// that may import both driver/... and router/...; it has no non-test code
// and nothing may import it.
package e2e
