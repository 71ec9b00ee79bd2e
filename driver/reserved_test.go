package driver

import (
	"strings"
	"testing"
)

// TestReservedArgsRefused: each flag the driver writes is refused in args
// in both spellings vLLM's parser takes (--flag value, --flag=value), and
// the error names the flag and says why.
func TestReservedArgsRefused(t *testing.T) {
	leader := TaskConfig{Model: "m", Port: "http", BlockSize: 16, TensorParallelSize: 1, DataParallelSize: 1,
		Role: RoleAgg, SideChannelPort: "nixl", PromptTokensDetails: true}
	kv := leader
	kv.KVEvents = true
	prefill := leader
	prefill.Role = RolePrefill
	tests := []struct {
		task  TaskConfig
		flag  string // as written in args
		value string
		want  string // the error after "args[i]: "
		fix   string // its end
	}{
		{leader, "--model", "other", "--model: the driver passes model", "set model in the task config instead"},
		{leader, "--host", "0.0.0.0", "--host: the driver serves the API", "remove it from args"},
		{leader, "--port", "9000", `--port: the driver serves the API on the port Nomad allocated to label "http"`, "set port in the task config instead"},
		{leader, "--uds", "/tmp/s", "--uds: a Unix socket replaces", "remove it from args"},
		{leader, "--served-model-name", "x", "--served-model-name: the driver serves the model as served_model_name", "set served_model_name in the task config instead"},
		{leader, "--block-size", "32", "--block-size: the driver passes block_size (16)", "set block_size in the task config instead"},
		{leader, "--tensor-parallel-size", "2", "--tensor-parallel-size: the driver passes tensor_parallel_size", "set tensor_parallel_size in the task config instead"},
		{leader, "--data-parallel-size", "2", "--data-parallel-size: the driver passes data_parallel_size", "set data_parallel_size in the task config instead"},
		{leader, "--max-model-len", "4096", "--max-model-len: the driver passes max_model_len", "set max_model_len in the task config instead"},
		{leader, "--gpu-memory-utilization", "0.8", "--gpu-memory-utilization: the driver passes gpu_memory_utilization", "set gpu_memory_utilization in the task config instead"},
		{leader, "--nnodes", "2", "--nnodes: the driver places the shards of a multi-node replica", "set shard in the task config instead"},
		{leader, "--node-rank", "1", "--node-rank: the driver places the shards of a multi-node replica", "set shard in the task config instead"},
		{leader, "--master-addr", "10.0.0.1", "--master-addr: the driver places the shards of a multi-node replica", "set shard in the task config instead"},
		{leader, "--master-port", "29500", "--master-port: the driver places the shards of a multi-node replica", "set shard in the task config instead"},
		{kv, "--kv-events-config", `{"enable_kv_cache_events":true}`, "--kv-events-config: kv_events is set", "remove it from args"},
		{prefill, "--kv-transfer-config", `{"kv_connector":"NixlConnector"}`, "--kv-transfer-config: role is prefill", "set kv_role in the task config instead"},
	}
	for _, tt := range tests {
		for _, args := range [][]string{{"--enforce-eager", tt.flag, tt.value}, {"--enforce-eager", tt.flag + "=" + tt.value}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				c := tt.task
				c.Args = args
				err := c.validArgs()
				if err == nil || !strings.HasPrefix(err.Error(), "args[1]: "+tt.want) || !strings.HasSuffix(err.Error(), "; "+tt.fix) {
					t.Errorf("got %v; want args[1]: %s...; %s", err, tt.want, tt.fix)
				}
			})
		}
	}
}

// TestReservedArgsSpellings: vLLM's other spellings of a reserved flag
// (underscores, dotted JSON keys, short aliases, argparse abbreviations,
// the --no- form of a boolean) are refused as well, naming the long flag.
func TestReservedArgsSpellings(t *testing.T) {
	task := TaskConfig{Model: "m", Port: "http", BlockSize: 16, KVEvents: true}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--block_size", "32"}, "args[0]: --block-size (as --block_size): "},
		{[]string{"--served_model_name=x"}, "args[0]: --served-model-name (as --served_model_name=x): "},
		{[]string{"--kv-events-config.endpoint", "tcp://*:5557"}, "args[0]: --kv-events-config (as --kv-events-config.endpoint): "},
		{[]string{"--kv_events_config.publisher=null"}, "args[0]: --kv-events-config (as --kv_events_config.publisher=null): "},
		{[]string{"-tp", "2"}, "args[0]: --tensor-parallel-size (as -tp): "},
		{[]string{"-tp=2"}, "args[0]: --tensor-parallel-size (as -tp): "},
		{[]string{"-dp", "2"}, "args[0]: --data-parallel-size (as -dp): "},
		{[]string{"-n", "2"}, "args[0]: --nnodes (as -n): "},
		{[]string{"-n2"}, "args[0]: --nnodes (as -n): "},
		{[]string{"-r", "1"}, "args[0]: --node-rank (as -r): "},
		{[]string{"--block", "32"}, "args[0]: --block-size (abbreviated --block, which vLLM's parser takes for it): "},
		{[]string{"--served-model=x"}, "args[0]: --served-model-name (abbreviated --served-model, "},
		{[]string{"--enable-prompt-tokens-details"}, "args[0]: --enable-prompt-tokens-details: the driver passes it unless prompt_tokens_details = false"},
		{[]string{"--no-enable-prompt-tokens-details"}, "args[0]: --no-enable-prompt-tokens-details: the driver passes it unless"},
		{[]string{"--headless"}, "args[0]: --headless: the driver runs every shard but rank 0 headless"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			c := task
			c.Args = tt.args
			if err := c.validArgs(); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %v; want an error starting %q", err, tt.want)
			}
		})
	}
}

// TestReservedArgsAllowed: flags the driver does not write for this task,
// and flags that merely share a prefix with one it writes, pass.
func TestReservedArgsAllowed(t *testing.T) {
	agg := TaskConfig{Model: "m", Port: "http", BlockSize: 16, Role: RoleAgg}
	worker := agg
	worker.Shard = &Shard{Rank: 1, Count: 2, LeaderAddress: "10.0.0.1:29500"}
	worker.KVEvents = true
	tests := []struct {
		name string
		task TaskConfig
		args []string
	}{
		{"engine flags", agg, []string{"--enable-prefix-caching", "--pipeline-parallel-size", "2", "-pp", "2", "--seed", "-1"}},
		{"longer flags sharing a prefix", agg, []string{"--data-parallel-size-local", "1", "-dpn", "0", "--model-impl", "vllm"}},
		{"kv events config without kv_events", agg, []string{"--kv-events-config", `{"enable_kv_cache_events":true}`}},
		{"kv transfer config on an agg replica (CPU offload)", agg, []string{"--kv-transfer-config", `{"kv_connector":"OffloadingConnector","kv_role":"kv_both"}`}},
		{"port on a headless rank, which serves no API", worker, []string{"--port", "8001", "--enable-prompt-tokens-details"}},
		{"kv events config on a rank that publishes none", worker, []string{"--kv-events-config", "{}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.task
			c.Args = tt.args
			if err := c.validArgs(); err != nil {
				t.Errorf("refused %q: %v", tt.args, err)
			}
		})
	}
}
