// Package config parses vllm-sim's command line: `serve MODEL` and the vLLM
// flags the driver passes, with vLLM's spellings and defaults, plus the
// simulator's own --sim-* flags. Unknown vLLM flags are accepted and
// reported, never fatal, so a jobspec written for vLLM runs on the simulator;
// an unknown --sim-* or single-dash flag, which no vLLM takes, is an error.
// Usage is the help `vllm-sim serve -h` prints, listing every flag with its
// default.
package config

import (
	"fmt"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/engine"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvxfer"
)

// Config is everything the simulator needs to start.
type Config struct {
	Model            string
	ServedModelNames []string
	Host             string
	Port             int
	// APIKeys are --api-key values: a /v1 request must present one of them.
	APIKeys             []string
	BlockSize           int
	NumGPUBlocks        int
	MaxNumSeqs          int
	MaxModelLen         int
	MaxNumBatchedTokens int
	TensorParallelSize  int
	DataParallelSize    int
	DataParallelRank    int // -1: not given, run every rank of DataParallelSize
	Headless            bool
	KVEvents            KVEvents
	// KVTransfer is --kv-transfer-config: the NixlConnector's role for
	// disaggregated prefill and decode (zero: aggregated serving).
	KVTransfer kvxfer.Config
	// KVBytesPerToken and KVBandwidth (bytes per second) model a pull's
	// time: blocks * block size * bytes per token / bandwidth.
	KVBytesPerToken int64
	KVBandwidth     float64
	// kvBytesFromConfig is --sim-kv-bytes-per-token=config, resolved
	// from config.json once the model is known.
	kvBytesFromConfig   bool
	Tokenizer           string
	Seed                int64
	EnablePrefixCaching bool
	EnableLoRA          bool
	// EnablePromptTokensDetails is vLLM's --enable-prompt-tokens-details:
	// off (vLLM's default), chat and completion answers carry no
	// usage.prompt_tokens_details, so no cached_tokens.
	EnablePromptTokensDetails bool
	// taskFlags say what the model serves (task.go).
	taskFlags
	LoRAModules []LoRAModule

	Latency          engine.Latency
	EventFormat      string // "array" or "map"
	EventSchema      int    // BlockStored array length
	ReplayFormat     string // "new" or "old"
	CPUOffloadBlocks int
	// CPUOffloadBlockSize is the offloading connector's block size in
	// tokens, a multiple of BlockSize (0: BlockSize).
	CPUOffloadBlockSize int
	// CPUOffloadPlaceholders sends the CPU tier's stores as vLLM's
	// OffloadingConnector does without self_describing_kv_events:
	// block_size 0 and no tokens.
	CPUOffloadPlaceholders bool
	// KVCacheGroupsFlag is --sim-kv-cache-groups as given; KVCacheGroups
	// the groups it resolves to (from the list, or from config.json).
	KVCacheGroupsFlag string
	KVCacheGroups     []kvcache.GroupSpec

	// Engine holds what overrides --block-size, as vLLM's engine does
	// (blocksize.go); BlockSize is the size after it.
	Engine EngineBlockSize

	// Unknown lists the flags accepted without meaning to the simulator.
	Unknown []string
}

// Defaults are vLLM's where vLLM has one, sized for a simulated 8B model.
func Defaults() Config {
	return Config{
		Host:                "0.0.0.0",
		Port:                8000,
		BlockSize:           16,
		NumGPUBlocks:        8192,
		MaxNumSeqs:          256,
		MaxModelLen:         8192,
		MaxNumBatchedTokens: 8192,
		TensorParallelSize:  1,
		DataParallelSize:    1,
		DataParallelRank:    -1,
		EnablePrefixCaching: true,
		taskFlags:           taskFlags{Runner: "auto", Convert: "auto", NumLabels: 2},
		Latency:             engine.DefaultLatency(),
		EventFormat:         "array",
		EventSchema:         12,
		ReplayFormat:        "new",
		KVCacheGroupsFlag:   "full",
		KVCacheGroups:       kvcache.DefaultGroups(),
		// An 8B model's KV in bf16: 2 (K and V) * 32 layers * 8 KV heads
		// * 128 head dims * 2 bytes; a 200 Gb/s RDMA NIC.
		KVBytesPerToken: 2 * 32 * 8 * 128 * 2,
		KVBandwidth:     25e9,
	}
}

// ServedName is the model name clients use: the first --served-model-name,
// else the model argument, as in vLLM.
func (c Config) ServedName() string {
	if len(c.ServedModelNames) > 0 {
		return c.ServedModelNames[0]
	}
	return c.Model
}

// Ranks lists the data-parallel ranks this process runs.
func (c Config) Ranks() []int {
	if c.DataParallelRank >= 0 {
		return []int{c.DataParallelRank}
	}
	r := make([]int, c.DataParallelSize)
	for i := range r {
		r[i] = i
	}
	return r
}

// Validate checks what a flag's type cannot.
func (c Config) Validate() error {
	checks := []struct {
		ok  bool
		msg string
	}{
		{c.Model != "", "missing MODEL: usage is vllm-sim serve MODEL [flags]"},
		{c.Port >= 0 && c.Port <= 65535, fmt.Sprintf("--port %d is out of range", c.Port)},
		{c.BlockSize > 0, fmt.Sprintf("--block-size must be positive, got %d", c.BlockSize)},
		{c.NumGPUBlocks > 0, fmt.Sprintf("--num-gpu-blocks-override must be positive, got %d", c.NumGPUBlocks)},
		{c.MaxNumSeqs > 0, fmt.Sprintf("--max-num-seqs must be positive, got %d", c.MaxNumSeqs)},
		{c.MaxModelLen > 0, fmt.Sprintf("--max-model-len must be positive, got %d", c.MaxModelLen)},
		{c.MaxNumBatchedTokens > 0, fmt.Sprintf("--max-num-batched-tokens must be positive, got %d", c.MaxNumBatchedTokens)},
		{c.TensorParallelSize > 0, fmt.Sprintf("--tensor-parallel-size must be positive, got %d", c.TensorParallelSize)},
		{c.DataParallelSize > 0, fmt.Sprintf("--data-parallel-size must be positive, got %d", c.DataParallelSize)},
		{c.DataParallelRank < c.DataParallelSize, fmt.Sprintf("--data-parallel-rank %d is not below --data-parallel-size %d", c.DataParallelRank, c.DataParallelSize)},
		{c.EventFormat == "array" || c.EventFormat == "map", fmt.Sprintf("--sim-event-format %q is not array or map", c.EventFormat)},
		{c.ReplayFormat == "new" || c.ReplayFormat == "old", fmt.Sprintf("--sim-replay-format %q is not new or old", c.ReplayFormat)},
		{c.KVBytesPerToken > 0, fmt.Sprintf("--sim-kv-bytes-per-token must be positive, got %d", c.KVBytesPerToken)},
		{c.KVBandwidth > 0, fmt.Sprintf("--sim-kv-transfer-bandwidth must be positive (bytes per second), got %v", c.KVBandwidth)},
		{c.CPUOffloadBlocks >= 0, fmt.Sprintf("--sim-cpu-offload-blocks must not be negative, got %d", c.CPUOffloadBlocks)},
		// vLLM's OffloadingSpec asserts offloaded_block_size % gpu_block_size == 0.
		{c.CPUOffloadBlockSize == 0 || c.CPUOffloadBlockSize > 0 && c.BlockSize > 0 && c.CPUOffloadBlockSize%c.BlockSize == 0,
			fmt.Sprintf("--sim-cpu-offload-block-size %d is not a multiple of --block-size %d", c.CPUOffloadBlockSize, c.BlockSize)},
		{len(c.LoRAModules) == 0 || c.EnableLoRA, "--lora-modules needs --enable-lora"},
		{c.Latency.LoadFactor >= 1, fmt.Sprintf("--sim-load-factor must be at least 1, got %v", c.Latency.LoadFactor)},
		// vLLM refuses to start when one sequence of max-model-len cannot fit.
		{c.NumGPUBlocks*c.BlockSize >= c.MaxModelLen, fmt.Sprintf("the KV cache (%d blocks of %d tokens) cannot hold one sequence of --max-model-len %d", c.NumGPUBlocks, c.BlockSize, c.MaxModelLen)},
	}
	for _, ch := range checks {
		if !ch.ok {
			return fmt.Errorf("%s", ch.msg)
		}
	}
	if err := c.validateGroups(); err != nil {
		return err
	}
	if err := c.validateTask(); err != nil {
		return err
	}
	for _, d := range []time.Duration{c.Latency.Overhead, c.Latency.PrefillPerToken, c.Latency.CPULoadPerToken, c.Latency.InterToken} {
		if d < 0 {
			return fmt.Errorf("latency flags must not be negative, got %v", d)
		}
	}
	return nil
}

// validateGroups checks the KV-cache groups against the flags they meet.
func (c Config) validateGroups() error {
	if err := kvcache.ValidateGroups(c.KVCacheGroups); err != nil {
		return fmt.Errorf("--sim-kv-cache-groups: %w", err)
	}
	if kvcache.IsDefault(c.KVCacheGroups) {
		return nil
	}
	if c.CPUOffloadBlocks > 0 {
		return fmt.Errorf("--sim-cpu-offload-blocks plays the offloading connector for one full-attention group only; --sim-kv-cache-groups is %s", kvcache.FormatGroups(c.KVCacheGroups))
	}
	// One sequence of --max-model-len must fit in every group at once: the
	// simulator allocates a prompt's blocks in each attention group on
	// admission, and a Mamba group holds at most two.
	need, perGroup := 0, (c.MaxModelLen+c.BlockSize-1)/c.BlockSize
	for _, g := range c.KVCacheGroups {
		if g.Kind == kvcache.Mamba {
			need += 2
		} else {
			need += perGroup
		}
	}
	if c.NumGPUBlocks < need {
		return fmt.Errorf("the KV cache (%d blocks) cannot hold one sequence of --max-model-len %d in every group of --sim-kv-cache-groups %s: it needs %d blocks", c.NumGPUBlocks, c.MaxModelLen, kvcache.FormatGroups(c.KVCacheGroups), need)
	}
	if len(c.KVCacheGroups) > 1 && c.EventFormat == "array" && c.EventSchema < 10 {
		return fmt.Errorf("--sim-event-schema %d has no group_idx (it came with the 10-field BlockStored); --sim-kv-cache-groups %s needs 10 or 12", c.EventSchema, kvcache.FormatGroups(c.KVCacheGroups))
	}
	return nil
}
