package config

import "fmt"

// Index bounds each model's block index beyond what the replicas'
// engines advertise in vllm:cache_config_info.
type Index struct {
	// CPURatio is the CPU-tier blocks the index makes room for per
	// advertised GPU block of a replica whose engine advertises no CPU
	// blocks. vLLM's V1 engines advertise num_cpu_blocks 0 (or None) even
	// when a KV connector (the OffloadingConnector behind
	// --kv-offloading-size, LMCache) offloads blocks to CPU and the driver
	// indexes them as the CPU tier; without this room those blocks would
	// take the GPU blocks' share of the model's key cap. 0: no room for an
	// unadvertised CPU tier.
	CPURatio int
}

// defaultIndex is 8 CPU blocks per GPU block: an offload buffer of 8× the
// GPU's KV cache fits, and the index stays bounded at (1+8)×1.25 × the
// advertised GPU blocks (about 256 bytes each).
func defaultIndex() Index { return Index{CPURatio: 8} }

func (ix Index) validate() []error {
	if ix.CPURatio < 0 {
		return []error{fmt.Errorf("index_cpu_ratio %d: must not be negative (0: no room for unadvertised CPU blocks)", ix.CPURatio)}
	}
	return nil
}

// indexSettings are the environment variables and flags of Index.
var indexSettings = []setting{
	{"LLMGW_INDEX_CPU_RATIO", "index-cpu-ratio", "CPU-tier index room per GPU block for replicas advertising no CPU blocks (0: none)", integer("index cpu ratio", func(c *Config) *int { return &c.Index.CPURatio })},
}

func init() { settings = append(settings, indexSettings...) }

// applyFileIndex takes the file's index settings.
func (c *Config) applyFileIndex(fc *fileConfig) {
	if fc.IndexCPURatio != nil {
		c.Index.CPURatio = *fc.IndexCPURatio
	}
}
