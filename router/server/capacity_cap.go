package server

import (
	"math"

	"github.com/llmgw/llmgw/router/index"
)

// The key cap counts each replica's CPU tier against its own room, not
// against its GPU blocks' share. vLLM's V1 engines advertise
// num_cpu_blocks 0 (older releases) or None (newer) in
// vllm:cache_config_info even when a KV connector offloads blocks to CPU
// (the OffloadingConnector behind --kv-offloading-size, LMCache): the
// connector's CPU capacity is in its own configuration, which no metric
// states in blocks. The driver still indexes the connector's BlockStored
// events (medium "CPU") as the CPU tier, so without room of their own those
// blocks would fill the GPU blocks' share and be refused at the cap.

// maxKeyCap is the largest key cap capacity sets: whatever an engine
// advertises, the cap stays a positive int (SetMaxKeys reads 0 as "no
// cap", so a sum that wrapped negative would lift the bound).
const maxKeyCap = math.MaxInt32

// cpuRoom is the CPU-tier blocks the index makes room for on a replica
// advertising gpu and cpu blocks: cpu when advertised, else ratio × gpu
// (config's index_cpu_ratio; 0: none).
func cpuRoom(gpu, cpu, ratio int) float64 {
	if cpu > 0 {
		return float64(cpu)
	}
	return float64(gpu) * float64(max(ratio, 0))
}

// keyCap is a model's key cap from its replicas' advertised blocks per
// tier: each replica's GPU blocks plus its CPU room, summed, with
// capacitySlack, at most maxKeyCap. A key held on both tiers of a replica
// is one key, so the sum is an upper bound on what a consistent index
// holds. 0 only when nothing is advertised.
func keyCap(advs [][2]int, ratio int) int {
	total := 0.0
	for _, a := range advs {
		total += float64(max(a[index.GPU], 0)) + cpuRoom(a[index.GPU], a[index.CPU], ratio)
	}
	return int(min(total*capacitySlack, maxKeyCap))
}
