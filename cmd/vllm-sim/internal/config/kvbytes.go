package config

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// KVBytesFromConfig is the --sim-kv-bytes-per-token value that derives the
// size from the model directory's config.json.
const KVBytesFromConfig = "config"

// maxHeads bounds the attention heads a config.json may declare, so the
// product of the dimensions stays far inside an int64.
const maxHeads = 1 << 16

// kvDims is the part of a Hugging Face config.json that sizes a token's KV.
type kvDims struct {
	Layers     int     `json:"num_hidden_layers"`
	Heads      int     `json:"num_attention_heads"`
	KVHeads    *int    `json:"num_key_value_heads"`
	HeadDim    *int    `json:"head_dim"`
	Hidden     int     `json:"hidden_size"`
	TorchDType string  `json:"torch_dtype"`
	DType      string  `json:"dtype"`
	TextConfig *kvDims `json:"text_config"`
	// KVLoRARank and QKRopeHeadDim size a multi-head latent attention
	// (DeepSeek's MLA) cache entry.
	KVLoRARank    int `json:"kv_lora_rank"`
	QKRopeHeadDim int `json:"qk_rope_head_dim"`
}

// KVBytesPerToken derives a token's KV size from a config.json: keys and
// values (2) times layers, KV heads (num_key_value_heads, else every
// attention head), head size (head_dim, else hidden_size / heads) and the
// dtype's bytes (bfloat16 and float16 2, float32 4; vLLM's "auto" cache
// dtype is the model's). Multimodal configs nest it under text_config.
// A model with multi-head latent attention (kv_lora_rank set) caches one
// latent vector of kv_lora_rank + qk_rope_head_dim per layer instead, as
// vLLM's MLA spec does (one KV head of that size, no separate K and V).
func KVBytesPerToken(data []byte) (int64, error) {
	var d kvDims
	if err := json.Unmarshal(data, &d); err != nil {
		return 0, fmt.Errorf("config.json: %w", err)
	}
	if d.TextConfig != nil && d.Layers == 0 {
		d = *d.TextConfig
	}
	if d.Layers < 1 || d.Layers > maxLayers || d.Heads < 1 || d.Heads > maxHeads {
		return 0, fmt.Errorf("config.json: want num_hidden_layers in 1..%d and num_attention_heads in 1..%d, got %d and %d", maxLayers, maxHeads, d.Layers, d.Heads)
	}
	size, err := dtypeBytes(d)
	if err != nil {
		return 0, err
	}
	if d.KVLoRARank != 0 {
		if d.KVLoRARank < 0 || d.KVLoRARank > 1<<16 || d.QKRopeHeadDim < 0 || d.QKRopeHeadDim > 1<<16 {
			return 0, fmt.Errorf("config.json: want kv_lora_rank in 1..%d and qk_rope_head_dim in 0..%d, got %d and %d", 1<<16, 1<<16, d.KVLoRARank, d.QKRopeHeadDim)
		}
		return int64(d.Layers) * int64(d.KVLoRARank+d.QKRopeHeadDim) * size, nil
	}
	kvHeads := d.Heads
	if d.KVHeads != nil {
		kvHeads = *d.KVHeads
	}
	headDim := 0
	if d.HeadDim != nil {
		headDim = *d.HeadDim
	} else if d.Hidden%d.Heads == 0 {
		headDim = d.Hidden / d.Heads
	}
	if kvHeads < 1 || kvHeads > d.Heads || headDim < 1 || headDim > 1<<16 {
		return 0, fmt.Errorf("config.json: want 1..%d KV heads and a positive head size, got %d and %d", d.Heads, kvHeads, headDim)
	}
	return 2 * int64(d.Layers) * int64(kvHeads) * int64(headDim) * size, nil
}

// dtypeBytes is the size of one element of the model's dtype.
func dtypeBytes(d kvDims) (int64, error) {
	dtype := d.TorchDType
	if dtype == "" {
		dtype = d.DType
	}
	switch dtype {
	case "bfloat16", "float16", "":
		return 2, nil
	case "float32":
		return 4, nil
	}
	return 0, fmt.Errorf("config.json: dtype %q: give --sim-kv-bytes-per-token as a number", dtype)
}

// resolveKVBytes derives --sim-kv-bytes-per-token=config from the model
// directory (MODEL, else --tokenizer).
func (c *Config) resolveKVBytes() error {
	if !c.kvBytesFromConfig {
		return nil
	}
	dir := c.Model
	if st, err := os.Stat(dir); (err != nil || !st.IsDir()) && c.Tokenizer != "" {
		dir = c.Tokenizer
	}
	f, err := os.Open(filepath.Join(dir, "config.json"))
	if err != nil {
		return fmt.Errorf("--sim-kv-bytes-per-token=config: model directory: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigJSON+1))
	if err == nil && len(data) > maxConfigJSON {
		err = fmt.Errorf("%s is over %d bytes", f.Name(), maxConfigJSON)
	}
	if err != nil {
		return fmt.Errorf("--sim-kv-bytes-per-token=config: %w", err)
	}
	n, err := KVBytesPerToken(data)
	if err != nil {
		return fmt.Errorf("--sim-kv-bytes-per-token=config: %s: %w", f.Name(), err)
	}
	c.KVBytesPerToken = n
	return nil
}
