package driver

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/plugin/ctymsgpack"
	"github.com/llmgw/llmgw/plugin/nomadconfig"
)

// decodeTask runs a job's config through Nomad's pipeline (the test host's
// encoder) and our decoder.
func decodeTask(t *testing.T, cfg map[string]any) (TaskConfig, error) {
	t.Helper()
	b, err := nomadconfig.EncodeConfig(taskSpec, cfg, map[string]string{"NOMAD_PORT_http": "8000"})
	if err != nil {
		return TaskConfig{}, err
	}
	var tc TaskConfig
	err = ctymsgpack.Decode(b, &tc)
	return tc, err
}

func TestTaskConfigDefaults(t *testing.T) {
	got, err := decodeTask(t, map[string]any{"model": "Qwen/Qwen3-0.6B", "gpu_memory_utilization": 0.9})
	if err != nil {
		t.Fatal(err)
	}
	want := TaskConfig{Model: "Qwen/Qwen3-0.6B", Port: "http", BlockSize: 16, TensorParallelSize: 1,
		DataParallelSize: 1, GPUMemoryUtilization: 0.9, Role: "agg", SideChannelPort: "nixl", PromptTokensDetails: true}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestBlockSizesVLLMTakes: any size vLLM's CacheConfig takes passes, the
// Mamba-aligned sizes of hybrid models included; it reaches the engine's
// --block-size as written.
func TestBlockSizesVLLMTakes(t *testing.T) {
	for _, n := range []int{1, 16, 24, 64, 528, 1056, 4096} {
		got, err := decodeTask(t, map[string]any{"model": "m", "block_size": n})
		if err != nil {
			t.Fatalf("block_size %d: %v", n, err)
		}
		if err := got.validate(map[string]bool{"http": true}); err != nil || got.BlockSize != n {
			t.Errorf("block_size %d: %v, decoded %d", n, err, got.BlockSize)
		}
	}
}

func TestPluginConfigDefaults(t *testing.T) {
	b, err := nomadconfig.EncodeConfig(configSpec, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	if err := ctymsgpack.Decode(b, &c); err != nil {
		t.Fatal(err)
	}
	want := Config{Engine: "vllm", ConsulAddress: "127.0.0.1:8500", Discovery: "consul", RouterService: "llmgw-router", KVFlushInterval: 250 * time.Millisecond, KVKeepAlive: 10 * time.Second,
		DefaultUser: "nobody", DeniedUsers: []string{"root"}, KVTransport: "ipc"}
	if d := cmp.Diff(want, c); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if err := c.validate(); err != nil {
		t.Error(err)
	}
}

// TestInvalidTaskConfigs: every rejection names the attribute at fault,
// whether Nomad's decoding (schema) or validate() catches it.
func TestInvalidTaskConfigs(t *testing.T) {
	ports := map[string]bool{"http": true}
	tests := []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"missing model", map[string]any{"port": "http"}, `"model" is required`},
		{"empty model", map[string]any{"model": ""}, "model: must not be empty"},
		{"unknown field", map[string]any{"model": "m", "modle": "x"}, "modle"},
		{"wrong type", map[string]any{"model": "m", "kv_events": "perhaps"}, "kv_events"},
		{"fractional int", map[string]any{"model": "m", "block_size": 1.5}, "block_size: want a whole number"},
		{"bad port label", map[string]any{"model": "m", "port": "grpc"}, `port: no port labelled "grpc"`},
		{"block size", map[string]any{"model": "m", "block_size": 5000}, "block_size: 5000 is not within 1..4096"},
		{"tp", map[string]any{"model": "m", "tensor_parallel_size": 0}, "tensor_parallel_size: 0 is out of range"},
		{"gpu util", map[string]any{"model": "m", "gpu_memory_utilization": 1.5}, "gpu_memory_utilization: 1.5"},
		{"max len", map[string]any{"model": "m", "max_model_len": -1}, "max_model_len"},
		{"shard rank", map[string]any{"model": "m", "shard": []map[string]any{{"rank": 2, "count": 2, "leader_address": "a:1"}}}, "shard.rank: 2"},
		{"shard leader", map[string]any{"model": "m", "shard": []map[string]any{{"rank": 1, "count": 2}}}, "shard.leader_address"},
		{"shard missing count", map[string]any{"model": "m", "shard": []map[string]any{{"rank": 0}}}, `"count" is required`},
		{"env name", map[string]any{"model": "m", "env": map[string]string{"A=B": "c"}}, "env: invalid variable name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := decodeTask(t, tt.cfg)
			if err == nil {
				err = tc.validate(ports)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestPluginConfigValidate(t *testing.T) {
	tests := []struct {
		c    Config
		want string
	}{
		{Config{RouterService: "r", KVFlushInterval: time.Second, KVKeepAlive: time.Minute}, "engine"},
		{Config{Engine: "vllm", RouterService: "r"}, "kv_flush_interval"},
		{Config{Engine: "vllm", RouterService: "r", KVFlushInterval: time.Second, KVKeepAlive: time.Millisecond}, "kv_keep_alive"},
		{Config{Engine: "vllm", KVFlushInterval: time.Second, KVKeepAlive: time.Minute}, "router_service"},
		{Config{Engine: "vllm", RouterService: "r", KVFlushInterval: time.Second, KVKeepAlive: time.Minute, OwnerPid: -1}, "owner_pid"},
		{Config{Engine: "vllm", RouterService: "r", KVFlushInterval: time.Second, KVKeepAlive: time.Minute, Discovery: "dns"}, "discovery"},
		{Config{Engine: "vllm", RouterService: "r", KVFlushInterval: time.Second, KVKeepAlive: time.Minute, Discovery: "consul", KVTransport: "udp"}, "kv_transport"},
	}
	for _, tt := range tests {
		if err := tt.c.validate(); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%+v: got %v; want %s", tt.c, err, tt.want)
		}
	}
}

// FuzzTaskConfig: hostile config bytes never crash decoding or validation.
func FuzzTaskConfig(f *testing.F) {
	b, _ := nomadconfig.EncodeConfig(taskSpec, map[string]any{"model": "m", "shard": []map[string]any{{"rank": 0, "count": 1}}}, nil)
	f.Add(b)
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		var tc TaskConfig
		if ctymsgpack.Decode(data, &tc) == nil {
			_ = tc.validate(map[string]bool{"http": true})
			_ = buildArgs(launch{Task: tc, Engine: "vllm", KVPort: 1})
		}
	})
}
