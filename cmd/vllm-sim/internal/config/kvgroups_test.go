package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
)

// layers repeats pattern to n layers.
func layers(n int, pattern ...string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = pattern[i%len(pattern)]
	}
	return out
}

func configJSON(t *testing.T, v map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGroupsFromModelConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  map[string]any
		want string
	}{
		// gpt-oss: 24 layers alternating, window 128, sliding first.
		{"gpt-oss", map[string]any{"layer_types": layers(24, "sliding_attention", "full_attention"), "sliding_window": 128},
			"sliding_window:128,full"},
		// Gemma 3 1B: 26 layers, 5 sliding then 1 full: 22 and 4 layers,
		// split into groups of 4.
		{"gemma3 5:1", map[string]any{"layer_types": layers(26, "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"), "sliding_window": 512},
			"sliding_window:512,sliding_window:512,sliding_window:512,sliding_window:512,sliding_window:512,sliding_window:512,full"},
		// Qwen3-Next: 48 layers, 3 linear attention then 1 full.
		{"qwen3-next", map[string]any{"layer_types": layers(48, "linear_attention", "linear_attention", "linear_attention", "full_attention")},
			"mamba,mamba,mamba,full"},
		{"granite 4", map[string]any{"layer_types": layers(40, "mamba", "mamba", "mamba", "mamba", "mamba", "mamba", "mamba", "mamba", "mamba", "attention")},
			"mamba,mamba,mamba,mamba,mamba,mamba,mamba,mamba,mamba,full"},
		// 9 and 8 layers: within 1.5 times, one group each.
		{"near equal counts", map[string]any{"layer_types": append(layers(16, "full_attention", "sliding_attention"), "full_attention"), "sliding_window": 64},
			"full,sliding_window:64"},
		// gpt-oss with an EAGLE drafter's extra full layer: 12 and 13, still
		// one group each (vLLM pads the window group to 13 layers).
		{"12 sliding and 13 full", map[string]any{"layer_types": append(layers(24, "sliding_attention", "full_attention"), "full_attention"), "sliding_window": 128},
			"sliding_window:128,full"},
		// 10 and 20: twice the smallest, so groups of 10.
		{"1 full : 2 sliding", map[string]any{"layer_types": layers(30, "full_attention", "sliding_attention", "sliding_attention"), "sliding_window": 64},
			"full,sliding_window:64,sliding_window:64"},
		{"all full", map[string]any{"layer_types": layers(32, "full_attention")}, "full"},
		{"nemotron-h pattern", map[string]any{"hybrid_override_pattern": "M-M-M*-M-M-M*-"}, "mamba,mamba,mamba,full"},
		{"multimodal text_config", map[string]any{"text_config": map[string]any{"layer_types": layers(12, "sliding_attention", "full_attention"), "sliding_window": 1024}},
			"sliding_window:1024,full"},
		{"window from the outer config", map[string]any{"sliding_window": 256, "text_config": map[string]any{"layer_types": layers(4, "sliding_attention", "full_attention")}},
			"sliding_window:256,full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := GroupsFromModelConfig(configJSON(t, tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			if got := kvcache.FormatGroups(g); got != tt.want {
				t.Errorf("groups %s; want %s", got, tt.want)
			}
		})
	}
}

func TestGroupsFromModelConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{"not json", `{"layer_types": [`, "not a JSON config"},
		{"no layout", `{"num_hidden_layers": 32}`, "no layer_types"},
		{"window missing", `{"layer_types": ["sliding_attention", "full_attention"]}`, "sliding_window is missing"},
		{"window zero", `{"layer_types": ["sliding_attention"], "sliding_window": 0}`, "not positive"},
		{"unknown type", `{"layer_types": ["chunked_attention"]}`, `"chunked_attention"`},
		{"empty", `{"layer_types": []}`, "no layer holds"},
		{"bad pattern", `{"hybrid_override_pattern": "M*X"}`, "layer 2"},
		{"too many layers", `{"layer_types": [` + strings.Repeat(`"full_attention",`, maxLayers) + `"full_attention"]}`, "at most"},
		// 1 full and 65 sliding layers make 65 groups of one layer.
		{"too many groups", string(configJSON(t, map[string]any{"layer_types": append(layers(65, "sliding_attention"), "full_attention"), "sliding_window": 8})), "KV-cache groups"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := GroupsFromModelConfig([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want one naming %q", err, tt.want)
			}
		})
	}
}

func TestKVCacheGroupsFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := configJSON(t, map[string]any{"layer_types": layers(4, "sliding_attention", "full_attention"), "sliding_window": 128})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	good := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "m"}, "full"},
		{[]string{"serve", "m", "--sim-kv-cache-groups", "full,sliding_window:128"}, "full,sliding_window:128"},
		{[]string{"serve", "m", "--sim_kv_cache_groups=full,mamba"}, "full,mamba"},
		{[]string{"serve", dir, "--sim-kv-cache-groups", "config"}, "sliding_window:128,full"},
		{[]string{"serve", "org/name", "--tokenizer", dir, "--sim-kv-cache-groups=config"}, "sliding_window:128,full"},
		{[]string{"serve", "m", "--sim-kv-cache-groups", "full,mamba", "--sim-event-format", "map", "--sim-event-schema", "6"}, "full,mamba"},
	}
	for _, tt := range good {
		c, err := Parse(tt.args)
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		if got := kvcache.FormatGroups(c.KVCacheGroups); got != tt.want {
			t.Errorf("%v: groups %s; want %s", tt.args, got, tt.want)
		}
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "m", "--sim-kv-cache-groups", "full,window:3"}, `unknown KV-cache group kind "window"`},
		{[]string{"serve", "m", "--sim-kv-cache-groups", "sliding_window:0"}, "not a positive number"},
		{[]string{"serve", "m", "--sim-kv-cache-groups="}, "no KV-cache group"},
		{[]string{"serve", t.TempDir(), "--sim-kv-cache-groups", "config"}, "config.json"},
		{[]string{"serve", "m", "--sim-kv-cache-groups", "full,mamba", "--sim-cpu-offload-blocks", "8"}, "one full-attention group only"},
		{[]string{"serve", "m", "--sim-kv-cache-groups", "full,mamba", "--sim-event-schema", "9"}, "no group_idx"},
		{[]string{"serve", "m", "--sim-kv-cache-groups", "full,sliding_window:8", "--num-gpu-blocks-override", "100", "--block-size", "16", "--max-model-len", "1600"}, "needs 200 blocks"},
	}
	for _, tt := range bad {
		_, err := Parse(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "--sim-kv-cache-groups") {
			t.Errorf("%v: error %v; want one naming --sim-kv-cache-groups and %q", tt.args, err, tt.want)
		}
	}
}

func FuzzGroupsFromModelConfig(f *testing.F) {
	f.Add([]byte(`{"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 128}`))
	f.Add([]byte(`{"hybrid_override_pattern": "M-M*"}`))
	f.Add([]byte(`{"text_config": {"layer_types": ["linear_attention", "full_attention"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := GroupsFromModelConfig(data)
		if err != nil {
			return
		}
		if err := kvcache.ValidateGroups(g); err != nil {
			t.Fatalf("derived invalid groups %v: %v", g, err)
		}
	})
}
