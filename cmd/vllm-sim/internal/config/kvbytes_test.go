package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKVBytesPerToken(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       int64
		err        string
	}{
		// Llama 3.1 8B: 32 layers, 8 KV heads of 128, bf16.
		{"llama 8B", `{"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"hidden_size":4096,"torch_dtype":"bfloat16"}`, 131072, ""},
		{"head_dim given", `{"num_hidden_layers":28,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,"hidden_size":1024,"dtype":"bfloat16"}`, 2 * 28 * 8 * 128 * 2, ""},
		{"no GQA, float32", `{"num_hidden_layers":2,"num_attention_heads":4,"hidden_size":256,"torch_dtype":"float32"}`, 2 * 2 * 4 * 64 * 4, ""},
		{"nested text_config", `{"text_config":{"num_hidden_layers":4,"num_attention_heads":8,"num_key_value_heads":2,"hidden_size":512}}`, 2 * 4 * 2 * 64 * 2, ""},
		// DeepSeek V3's MLA caches one latent vector (kv_lora_rank) and its
		// rope part per layer, not K and V per head: 61 * (512 + 64) * 2.
		{"MLA", `{"num_hidden_layers":61,"num_attention_heads":128,"num_key_value_heads":128,"hidden_size":7168,"kv_lora_rank":512,"qk_rope_head_dim":64,"torch_dtype":"bfloat16"}`, 61 * 576 * 2, ""},
		{"MLA without a rope part", `{"num_hidden_layers":2,"num_attention_heads":4,"hidden_size":256,"kv_lora_rank":64,"qk_rope_head_dim":-1}`, 0, "qk_rope_head_dim"},
		{"no layers", `{"num_attention_heads":8,"hidden_size":512}`, 0, "num_hidden_layers"},
		{"more KV heads than heads", `{"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":8,"hidden_size":256}`, 0, "KV heads"},
		{"fp8 model", `{"num_hidden_layers":2,"num_attention_heads":4,"hidden_size":256,"torch_dtype":"float8_e4m3fn"}`, 0, "as a number"},
		{"not JSON", `{`, 0, "config.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := KVBytesPerToken([]byte(tc.json))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestKVBytesFlag(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"hidden_size":4096}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]string{"serve", dir, "--sim-kv-bytes-per-token", "config"})
	if err != nil || c.KVBytesPerToken != 131072 {
		t.Fatalf("from config.json: %d, %v; want 131072", c.KVBytesPerToken, err)
	}
	if c, err = Parse([]string{"serve", "m", "--sim-kv-bytes-per-token", "4096"}); err != nil || c.KVBytesPerToken != 4096 {
		t.Fatalf("a number: %d, %v", c.KVBytesPerToken, err)
	}
	if _, err = Parse([]string{"serve", t.TempDir(), "--sim-kv-bytes-per-token", "config"}); err == nil || !strings.Contains(err.Error(), "--sim-kv-bytes-per-token=config: model directory") {
		t.Fatalf("no config.json: %v", err)
	}
	if _, err = Parse([]string{"serve", "m", "--sim-kv-bytes-per-token", "0"}); err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Fatalf("zero: %v", err)
	}
	if _, err = Parse([]string{"serve", "m", "--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_sender"}`}); err == nil || !strings.Contains(err.Error(), `unsupported kv_role "kv_sender"`) {
		t.Fatalf("bad role: %v", err)
	}
}

func FuzzKVBytesPerToken(f *testing.F) {
	f.Add([]byte(`{"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"hidden_size":4096}`))
	f.Add([]byte(`{"text_config":{"num_hidden_layers":4,"num_attention_heads":8,"head_dim":64}}`))
	f.Add([]byte(`{"num_hidden_layers":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if n, err := KVBytesPerToken(data); err == nil && n <= 0 {
			t.Fatalf("%d bytes per token from %s", n, data)
		}
	})
}
