package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestCPUOffloadWithinCap runs a vllm-sim replica of 16 GPU blocks with a
// 64-block CPU tier (vLLM's OffloadingConnector), whose cache_config_info
// advertises no CPU blocks, as vLLM's does; its KV events flow through the
// real driver intake and forwarder. Distinct prompts leave far more blocks
// on the CPU tier than the 16 GPU blocks' share of the key cap (20): the
// router keeps them all (index_cpu_ratio's room), the replica stays exact,
// nothing is refused or dropped, and no tier raises the oversize alarm.
func TestCPUOffloadWithinCap(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f := startFleetWith(t, []string{"--num-gpu-blocks-override", "16", "--max-model-len", "256", "--sim-cpu-offload-blocks", "64"})
	id := f.ids[0]
	r := f.router(t, "router-offload")
	poll.Until(t, "the replica from consul", func() bool { return len(r.Replicas().ForModel(model)) == 1 })
	waitExact(t, r, id)
	poll.Until(t, "the replica's advertised capacity", func() bool {
		return strings.Contains(metricsText(t, r), fmt.Sprintf(`llmgw_replica_kv_capacity_blocks{model=%q,replica=%q,tier="gpu"} 16`, model, id))
	})

	for i := range 24 {
		var sb strings.Builder
		for j := range 16 {
			fmt.Fprintf(&sb, "o%d_%d ", i, j)
		}
		if a := call(t, r.Addr(), "/v1/completions", completion(sb.String(), false)); a.code != 200 {
			t.Fatalf("request %d: %d %s", i, a.code, a.body)
		}
	}
	cpuSeries := regexp.MustCompile(fmt.Sprintf(`llmgw_replica_index_blocks\{model=%q,replica=%q,tier="cpu"\} (\d+)`, model, id))
	var m string
	cpu := 0
	poll.Until(t, "more CPU-tier blocks in the index than the GPU blocks' share of the cap", func() bool {
		m = metricsText(t, r)
		if g := cpuSeries.FindStringSubmatch(m); g != nil {
			cpu, _ = strconv.Atoi(g[1])
		}
		return cpu > 20
	})
	for _, want := range []string{
		fmt.Sprintf(`llmgw_index_rejected_total{model=%q} 0`, model),
		fmt.Sprintf(`llmgw_replica_index_oversized{model=%q,replica=%q,tier="gpu"} 0`, model, id),
		fmt.Sprintf(`llmgw_replica_index_oversized{model=%q,replica=%q,tier="cpu"} 0`, model, id),
		fmt.Sprintf(`llmgw_replica_index_resnapshots_total{model=%q,replica=%q} 0`, model, id),
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s (%d CPU blocks indexed)", want, cpu)
		}
	}
	if strings.Contains(m, fmt.Sprintf(`llmgw_replica_kv_refused{model=%q,replica=%q} 1`, model, id)) {
		t.Errorf("replica refused with %d CPU blocks indexed", cpu)
	}
	if mode := r.Replicas().Mode(id); mode != scheduler.ModeExact {
		t.Errorf("replica in mode %v; want exact", mode)
	}
}
