package e2e

import (
	"testing"

	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// TestApproxModeInConsul: replicas found in Consul whose drivers send no KV
// updates are routed in approx mode, and a repeated long prompt still goes
// back to the replica that served it.
func TestApproxModeInConsul(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	agent := consultest.Start(t)
	for _, id := range []string{"x-0/main", "x-1/main"} {
		registerReplica(t, agent.Client, id, startSim(t, "--sim-latency=false"), false)
	}
	c := routerConfig(token)
	c.Consul.Address = agent.Addr
	c.Consul.Services = []string{"vllm"}
	r := startRouter(t, c)
	poll.Until(t, "two replicas from consul", func() bool { return len(r.Replicas().ForModel(model)) == 2 })

	first := call(t, r.Addr(), "/v1/completions", completion(longPrompt(3), false))
	if first.code != 200 {
		t.Fatalf("first: %d %s", first.code, first.body)
	}
	for i := range 4 {
		a := call(t, r.Addr(), "/v1/completions", completion(longPrompt(3), false))
		if a.replica != first.replica || a.mode != "approx" || a.cached == 0 || cachedTokens(t, a.body) == 0 {
			t.Fatalf("repeat %d: on %q mode %q predicted %d; want %q, approx, a real cache hit", i, a.replica, a.mode, a.cached, first.replica)
		}
	}
}
