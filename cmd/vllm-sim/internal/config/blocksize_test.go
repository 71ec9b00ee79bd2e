package config

import (
	"strings"
	"testing"
)

// TestEngineBlockSize pins the block size the engine runs with to vLLM's
// overrides: FlashMLA keeps a multiple of 64 and forces 64 otherwise
// (vllm/platforms/cuda.py); a hybrid attention/Mamba model's attention
// block becomes 16 * cdiv(mamba page, 16 * one token's attention page)
// unless a larger one was asked for (vllm/model_executor/models/config.py,
// HybridAttentionMambaModelConfig). The 528 case has a Mamba page of 33
// sixteen-token attention pages of 2048 bytes (2 KV heads * head size 256
// * bf16 * K and V), the size vLLM logs for hybrid GDN models.
func TestEngineBlockSize(t *testing.T) {
	cases := []struct {
		args []string
		want int
		note string // a prefix of the line logged; "" for none
	}{
		{[]string{"m"}, 16, ""},
		{[]string{"m", "--sim-mla"}, 64, "Forcing kv cache block size to 64"},
		{[]string{"m", "--sim-mla", "--block-size", "32"}, 64, "Forcing"},
		{[]string{"m", "--sim-mla", "--block-size", "64"}, 64, ""},
		{[]string{"m", "--sim-mla", "--block-size", "128"}, 128, ""},
		{[]string{"m", "--sim-mla", "--block-size", "1"}, 64, "Forcing"},
		{[]string{"m", "--sim-mamba-page-bytes", "1081344", "--sim-attn-page-bytes-per-token", "2048"}, 528, "Setting attention block size to 528 tokens"},
		{[]string{"m", "--sim-mamba-page-bytes", "1081345", "--sim-attn-page-bytes-per-token", "2048"}, 544, "Setting"},
		{[]string{"m", "--sim-mamba-page-bytes", "65536", "--sim-attn-page-bytes-per-token", "2048"}, 32, "Setting"},
		{[]string{"m", "--sim-mamba-page-bytes", "65537", "--sim-attn-page-bytes-per-token", "2048"}, 48, "Setting"},
		{[]string{"m", "--sim-mamba-page-bytes", "1081344", "--sim-attn-page-bytes-per-token", "2048", "--block-size", "1024"}, 1024, ""},
		{[]string{"m", "--sim-mamba-page-bytes", "1081344", "--sim-attn-page-bytes-per-token", "2048", "--block-size", "528"}, 528, ""},
	}
	for _, c := range cases {
		cfg, err := Parse(append(c.args, "--num-gpu-blocks-override", "1024"))
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if cfg.BlockSize != c.want || !strings.HasPrefix(cfg.Engine.Note, c.note) || (c.note == "") != (cfg.Engine.Note == "") {
			t.Errorf("%v: block size %d, note %q; want %d, %q", c.args, cfg.BlockSize, cfg.Engine.Note, c.want, c.note)
		}
	}
}

// TestEngineBlockSizeRefused: the flags that cannot be read alone, or
// together, are refused with the flag named.
func TestEngineBlockSizeRefused(t *testing.T) {
	for _, args := range [][]string{
		{"m", "--sim-mamba-page-bytes", "1024"},
		{"m", "--sim-attn-page-bytes-per-token", "1024"},
		{"m", "--sim-mamba-page-bytes", "-1", "--sim-attn-page-bytes-per-token", "1024"},
		{"m", "--sim-mla", "--sim-mamba-page-bytes", "1024", "--sim-attn-page-bytes-per-token", "64"},
	} {
		if _, err := Parse(args); err == nil || !strings.Contains(err.Error(), "--sim-") {
			t.Errorf("%v: error %v; want one naming the flag", args, err)
		}
	}
}
