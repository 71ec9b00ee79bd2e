package config

import "fmt"

// EngineBlockSize is what decides the block size an engine really runs
// with: vLLM does not always keep the --block-size it is given, and the
// size it keeps is the one its KV events, its vllm:cache_config_info and
// its prefix cache use. The simulator plays two of its overrides, each
// cited in docs/VLLM_PARITY.md ("Engine block sizes").
type EngineBlockSize struct {
	// MLA is --sim-mla: the model uses multi-head latent attention on the
	// FlashMLA backend (DeepSeek V2/V3/R1 on Hopper), and a block size
	// that is not a multiple of 64 becomes 64 (vllm/platforms/cuda.py,
	// CudaPlatformBase.check_and_update_config).
	MLA bool
	// MambaPageBytes and AttnPageBytesPerToken are
	// --sim-mamba-page-bytes and --sim-attn-page-bytes-per-token: a hybrid
	// attention/Mamba model's Mamba state page and one token's attention
	// page, in bytes. vLLM raises the attention block size until an
	// attention page holds a Mamba page, in multiples of 16 tokens, so
	// the size is often not a power of two
	// (vllm/model_executor/models/config.py,
	// HybridAttentionMambaModelConfig.verify_and_update_config).
	MambaPageBytes        int
	AttnPageBytesPerToken int
	// Note is the line vLLM logs when it overrode the size ("" when not).
	Note string
}

// hybridAlignment is 16: the attention block size vLLM picks for a hybrid
// model is a multiple of it, since some attention backends take only
// multiples of 16.
const hybridAlignment = 16

// resolveBlockSize applies the engine's overrides to --block-size.
func (c *Config) resolveBlockSize() error {
	e := &c.Engine
	switch {
	case e.MambaPageBytes < 0 || e.AttnPageBytesPerToken < 0:
		return fmt.Errorf("--sim-mamba-page-bytes and --sim-attn-page-bytes-per-token must not be negative")
	case (e.MambaPageBytes > 0) != (e.AttnPageBytesPerToken > 0):
		return fmt.Errorf("--sim-mamba-page-bytes and --sim-attn-page-bytes-per-token go together: the attention block size is derived from both")
	case e.MLA && e.MambaPageBytes > 0:
		return fmt.Errorf("--sim-mla and --sim-mamba-page-bytes together: the simulator plays one block size override at a time")
	case c.BlockSize <= 0:
		return nil // Validate reports it
	}
	if e.MambaPageBytes > 0 {
		c.BlockSize, e.Note = HybridBlockSize(c.BlockSize, e.MambaPageBytes, e.AttnPageBytesPerToken)
	}
	if e.MLA {
		c.BlockSize, e.Note = MLABlockSize(c.BlockSize)
	}
	return nil
}

// MLABlockSize is the block size FlashMLA runs with when asked for
// requested, and vLLM's log line when it differs.
func MLABlockSize(requested int) (int, string) {
	if requested%64 == 0 {
		return requested, ""
	}
	return 64, "Forcing kv cache block size to 64 for FlashMLA backend."
}

// HybridBlockSize is the attention block size a hybrid model runs with
// when asked for requested: the smallest multiple of 16 tokens whose
// attention page holds the Mamba page, unless requested is larger; and
// vLLM's log line when it raised it.
func HybridBlockSize(requested, mambaPageBytes, attnPageBytesPerToken int) (int, string) {
	step := hybridAlignment * attnPageBytesPerToken
	size := hybridAlignment * ((mambaPageBytes + step - 1) / step)
	if requested >= size {
		return requested, ""
	}
	return size, fmt.Sprintf("Setting attention block size to %d tokens to ensure that attention page size is >= mamba page size.", size)
}
