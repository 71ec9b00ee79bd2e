package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// TestOlderEventSchemasRouteApprox runs a replica whose engine sends an
// older KV-event schema beside one that sends the newest, through the
// driver's intake and forwarder and real Consul. vllm-sim plays vLLM's
// BlockStored arrays of 8 fields (no extra_keys: salted blocks would be
// keyed as plain ones) and of 7 fields serving a LoRA adapter (a lora_id
// without lora_name: the adapter's blocks would be keyed as the base
// model's). The old replica routes approx with a reason naming the
// missing field, in /admin/replicas and /metrics, and no request is
// routed to it in exact mode; the newest replica stays exact.
func TestOlderEventSchemasRouteApprox(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	lora := []string{"--enable-lora", "--lora-modules", adapter + "=/loras/sql"}
	cases := []struct {
		name   string
		old    []string
		body   string // what the old engine is sent first
		reason string
	}{
		{"no extra_keys (8 fields)", []string{"--sim-event-schema", "8"}, completion(longPrompt(700), false), "carry no extra_keys"},
		{"lora_id without lora_name (7 fields)", append([]string{"--sim-event-schema", "7"}, lora...),
			loraCompletion(adapter, longPrompt(701)), "lora_id without lora_name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := startFleetWith(t, c.old, lora)
			old, cur := f.ids[0], f.ids[1]
			r := f.router(t, "router-1")
			poll.Until(t, "two replicas from consul", func() bool { return len(r.Replicas().ForModel(model)) == 2 })
			for id, body := range map[string]string{old: c.body, cur: completion(longPrompt(702), false)} {
				if a := call(t, f.sims[id].addr, "/v1/completions", body); a.code != 200 {
					t.Fatalf("%s: %d %s", id, a.code, a.body)
				}
			}
			poll.Until(t, "the old replica approx with its reason, the newest exact", func() bool {
				reps := adminReplicas(t, r)
				return reps[old].Mode == "approx" && strings.Contains(reps[old].ModeReason, c.reason) &&
					reps[cur].Mode == "exact" && reps[cur].ModeReason == ""
			})
			if line := fmt.Sprintf(`llmgw_replica_kv_untrusted{model=%q,replica=%q} 1`, model, old); !strings.Contains(metricsText(t, r), line) {
				t.Errorf("/metrics lacks %s", line)
			}
			for i := range 6 {
				a := call(t, r.Addr(), "/v1/completions", completion(longPrompt(710+i), false))
				if a.code != 200 {
					t.Fatalf("request %d: %d %s", i, a.code, a.body)
				}
				if a.replica == old && a.mode == "exact" {
					t.Errorf("request %d routed exact to %s, whose keys may be wrong", i, old)
				}
			}
		})
	}
}
