package driver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuildArgs(t *testing.T) {
	base := TaskConfig{Model: "Qwen/Qwen3-0.6B", Port: "http", BlockSize: 16, TensorParallelSize: 1, DataParallelSize: 1}
	with := func(f func(*TaskConfig)) TaskConfig { c := base; f(&c); return c }
	kvOn := with(func(c *TaskConfig) { c.KVEvents = true })
	tests := []struct {
		name string
		l    launch
		want []string
	}{
		{"minimal", launch{Task: base, Engine: "vllm", Host: "127.0.0.1", Port: 8000},
			[]string{"serve", "Qwen/Qwen3-0.6B", "--host", "127.0.0.1", "--port", "8000", "--block-size", "16"}},
		{"kv events on the leader", launch{Task: kvOn, Engine: "/usr/bin/vllm", Host: "0.0.0.0", Port: 8000, KVPort: 5557, ReplayPort: 5600},
			[]string{"serve", "Qwen/Qwen3-0.6B", "--host", "0.0.0.0", "--port", "8000", "--block-size", "16", "--kv-events-config",
				`{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://127.0.0.1:5557","replay_endpoint":"tcp://127.0.0.1:5600","topic":""}`}},
		{"kv events without replay, vllm-sim", launch{Task: kvOn, Engine: "bin/vllm-sim", Host: "h", Port: 1, KVPort: 5557},
			[]string{"serve", "Qwen/Qwen3-0.6B", "--host", "h", "--port", "1", "--block-size", "16", "--kv-events-config",
				`{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://127.0.0.1:5557","topic":""}`}},
		{"kv events over ipc sockets", launch{Task: kvOn, Engine: "vllm", Host: "h", Port: 1, KVDir: "/alloc/a/vllm/llmgw-kv"},
			[]string{"serve", "Qwen/Qwen3-0.6B", "--host", "h", "--port", "1", "--block-size", "16", "--kv-events-config",
				`{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"ipc:///alloc/a/vllm/llmgw-kv/inproc-events","replay_endpoint":"ipc:///alloc/a/vllm/llmgw-kv/inproc-replay","topic":""}`}},
		{"kv events asked but no listener", launch{Task: kvOn, Engine: "vllm", Host: "h", Port: 1},
			[]string{"serve", "Qwen/Qwen3-0.6B", "--host", "h", "--port", "1", "--block-size", "16"}},
		{"kv events asked, not vLLM", launch{Task: kvOn, Engine: "sglang", Host: "h", Port: 1, KVPort: 5557},
			[]string{"serve", "Qwen/Qwen3-0.6B", "--host", "h", "--port", "1", "--block-size", "16"}},
		{"kv port but not asked", launch{Task: base, Engine: "vllm", Host: "h", Port: 1, KVPort: 5557},
			[]string{"serve", "Qwen/Qwen3-0.6B", "--host", "h", "--port", "1", "--block-size", "16"}},
		{"non-leader rank gets no events and runs headless", launch{
			Task: with(func(c *TaskConfig) {
				c.KVEvents = true
				c.Shard = &Shard{Rank: 1, Count: 2, LeaderAddress: "10.0.0.1:29500"}
			}),
			Engine: "vllm", KVPort: 5557},
			[]string{"serve", "Qwen/Qwen3-0.6B", "--headless", "--block-size", "16",
				"--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1", "--master-port", "29500"}},
		{"leader of a two-node replica", launch{
			Task: with(func(c *TaskConfig) {
				c.KVEvents = true
				c.Shard = &Shard{Rank: 0, Count: 2, LeaderAddress: "10.0.0.1:29500"}
			}),
			Engine: "vllm", Host: "10.0.0.1", Port: 8000, KVPort: 5557},
			[]string{"serve", "Qwen/Qwen3-0.6B", "--host", "10.0.0.1", "--port", "8000", "--block-size", "16",
				"--nnodes", "2", "--node-rank", "0", "--master-addr", "10.0.0.1", "--master-port", "29500", "--kv-events-config",
				`{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://127.0.0.1:5557","topic":""}`}},
		{"prompt tokens details on the API server", launch{Task: with(func(c *TaskConfig) { c.PromptTokensDetails = true }), Engine: "vllm", Host: "h", Port: 1},
			[]string{"serve", "Qwen/Qwen3-0.6B", "--host", "h", "--port", "1", "--enable-prompt-tokens-details", "--block-size", "16"}},
		{"no prompt tokens details on a headless rank", launch{
			Task: with(func(c *TaskConfig) {
				c.PromptTokensDetails = true
				c.Shard = &Shard{Rank: 1, Count: 2, LeaderAddress: "10.0.0.1:29500"}
			}),
			Engine: "vllm"},
			[]string{"serve", "Qwen/Qwen3-0.6B", "--headless", "--block-size", "16",
				"--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1", "--master-port", "29500"}},
		{"everything", launch{
			Task: with(func(c *TaskConfig) {
				c.ServedModelName = "qwen"
				c.TensorParallelSize, c.DataParallelSize = 2, 4
				c.MaxModelLen, c.GPUMemoryUtilization = 4096, 0.85
				c.Args = []string{"--enforce-eager", "--seed", "7"}
			}), Engine: "vllm", Host: "h", Port: 9},
			[]string{"serve", "Qwen/Qwen3-0.6B", "--host", "h", "--port", "9", "--served-model-name", "qwen", "--block-size", "16",
				"--tensor-parallel-size", "2", "--data-parallel-size", "4", "--max-model-len", "4096",
				"--gpu-memory-utilization", "0.85", "--enforce-eager", "--seed", "7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, buildArgs(tt.l)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestKVDecision(t *testing.T) {
	tests := []struct {
		task   TaskConfig
		engine string
		ok     bool
		why    string
	}{
		{TaskConfig{KVEvents: true}, "vllm", true, ""},
		{TaskConfig{KVEvents: true, Shard: &Shard{Rank: 0, Count: 3}}, "/opt/bin/vllm-sim", true, ""},
		{TaskConfig{}, "vllm", false, "kv_events is not set in the task config"},
		{TaskConfig{KVEvents: true}, "/usr/bin/sglang", false, "engine sglang is not vLLM"},
		{TaskConfig{KVEvents: true, Shard: &Shard{Rank: 2, Count: 3}}, "vllm", false, "shard rank 2 is not the leader; only rank 0 publishes"},
	}
	for _, tt := range tests {
		ok, why := kvDecision(tt.task, tt.engine)
		if ok != tt.ok || why != tt.why {
			t.Errorf("kvDecision(%+v, %s) = %v, %q; want %v, %q", tt.task, tt.engine, ok, why, tt.ok, tt.why)
		}
	}
}

func TestBuildEnv(t *testing.T) {
	tests := []struct {
		name                string
		nomad, device, task map[string]string
		want                []string
	}{
		{"gpus become CUDA_VISIBLE_DEVICES",
			map[string]string{"PATH": "/bin", "NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b"}, map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b"}, nil,
			[]string{"CUDA_VISIBLE_DEVICES=GPU-a,GPU-b", "NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b", "PATH=/bin"}},
		{"job's CUDA_VISIBLE_DEVICES wins",
			nil, map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-a"}, map[string]string{"CUDA_VISIBLE_DEVICES": "0"},
			[]string{"CUDA_VISIBLE_DEVICES=0", "NVIDIA_VISIBLE_DEVICES=GPU-a"}},
		{"task env overrides nomad env", map[string]string{"HF_HOME": "/a"}, nil, map[string]string{"HF_HOME": "/b"},
			[]string{"HF_HOME=/b"}},
		{"no gpus", map[string]string{"NVIDIA_VISIBLE_DEVICES": "none"}, nil, nil, []string{"NVIDIA_VISIBLE_DEVICES=none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, buildEnv(tt.nomad, tt.device, tt.task)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
