package driver

import (
	"testing"

	"github.com/llmgw/llmgw/plugin/nomadconfig"
)

// BenchmarkParseTaskConfig is StartTask's decode and validation of a
// realistic task config.
func BenchmarkParseTaskConfig(b *testing.B) {
	data, err := nomadconfig.EncodeConfig(taskSpec, map[string]any{
		"model": "Qwen/Qwen3-0.6B", "served_model_name": "qwen3", "kv_events": true,
		"gpu_memory_utilization": 0.9, "max_model_len": 8192, "tensor_parallel_size": 2,
		"shard": []map[string]any{{"rank": 0, "count": 2, "leader_address": "10.0.0.1:29500"}},
		"args":  []string{"--enforce-eager"}, "env": map[string]string{"HF_HOME": "/opt/hf"},
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTaskConfig(data, []string{"http"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildArgs(b *testing.B) {
	l := launch{Task: TaskConfig{Model: "m", Port: "http", KVEvents: true, BlockSize: 16, TensorParallelSize: 2,
		DataParallelSize: 1, Shard: &Shard{Rank: 0, Count: 2, LeaderAddress: "10.0.0.1:29500"}},
		Engine: "vllm", Host: "10.0.0.1", Port: 8000, KVPort: 14000, ReplayPort: 14100}
	b.ReportAllocs()
	for b.Loop() {
		_ = buildArgs(l)
	}
}
