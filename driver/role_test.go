package driver

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRoleConfigs(t *testing.T) {
	ports := map[string]bool{"http": true, "nixl": true, "side": true}
	tests := []struct {
		name string
		cfg  map[string]any
		want string // "" for valid
	}{
		{"agg by default", map[string]any{"model": "m"}, ""},
		{"prefill on the default label", map[string]any{"model": "m", "role": "prefill"}, ""},
		{"decode with kv_role and a label", map[string]any{"model": "m", "role": "decode", "kv_role": "kv_consumer", "side_channel_port": "side"}, ""},
		{"unknown role", map[string]any{"model": "m", "role": "encode"}, `role: want agg, prefill or decode, got "encode"`},
		{"kv_role on agg", map[string]any{"model": "m", "kv_role": "kv_both"}, "kv_role: \"kv_both\" needs role prefill or decode"},
		{"unknown kv_role", map[string]any{"model": "m", "role": "prefill", "kv_role": "kv_sender"}, "kv_role: want kv_producer"},
		{"no side channel label", map[string]any{"model": "m", "role": "prefill", "side_channel_port": ""}, "side_channel_port: role prefill needs"},
		{"unallocated label", map[string]any{"model": "m", "role": "decode", "side_channel_port": "rdma"}, `side_channel_port: no port labelled "rdma"`},
		{"side channel on the API port", map[string]any{"model": "m", "role": "decode", "side_channel_port": "http"}, "is the API's port"},
		{"data parallel", map[string]any{"model": "m", "role": "prefill", "data_parallel_size": 2}, "data_parallel_size: 2 ranks need 2 side-channel ports"},
		{"multi-node", map[string]any{"model": "m", "role": "prefill", "shard": []map[string]any{{"rank": 0, "count": 2, "leader_address": "a:1"}}}, "shard: a prefill replica spans one node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := decodeTask(t, tt.cfg)
			if err == nil {
				err = tc.validate(ports)
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("valid config refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestRoleArgsAndEnv(t *testing.T) {
	base := TaskConfig{Model: "m", Port: "http", BlockSize: 16, TensorParallelSize: 1, DataParallelSize: 1, Role: RoleAgg, SideChannelPort: "nixl"}
	with := func(f func(*TaskConfig)) TaskConfig { c := base; f(&c); return c }
	prefill := with(func(c *TaskConfig) { c.Role = RolePrefill })
	tests := []struct {
		name   string
		task   TaskConfig
		engine string
		flag   string // the --kv-transfer-config value, "" for none
	}{
		{"agg", base, "vllm", ""},
		{"prefill is kv_both", prefill, "vllm", `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`},
		{"decode with kv_consumer", with(func(c *TaskConfig) { c.Role, c.KVRole = RoleDecode, "kv_consumer" }), "/opt/bin/vllm-sim", `{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}`},
		{"not vLLM", prefill, "sglang", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := buildArgs(launch{Task: tt.task, Engine: tt.engine, Host: "h", Port: 1})
			got := ""
			for i, a := range args {
				if a == "--kv-transfer-config" && i+1 < len(args) {
					got = args[i+1]
				}
			}
			if got != tt.flag {
				t.Errorf("--kv-transfer-config %q, want %q (argv %q)", got, tt.flag, args)
			}
		})
	}
	// The operator's args come last, where vLLM's parser would let a
	// --kv-transfer-config win, so validation refuses one for a P/D role.
	over := with(func(c *TaskConfig) {
		c.Role, c.Args = RolePrefill, []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`}
	})
	if args := buildArgs(launch{Task: over, Engine: "vllm", Host: "h", Port: 1}); args[len(args)-1] != over.Args[1] {
		t.Errorf("operator's flag is not last: %q", args)
	}
	if err := over.validate(map[string]bool{"http": true, "nixl": true}); err == nil || !strings.Contains(err.Error(), "args[0]: --kv-transfer-config: role is prefill") {
		t.Errorf("validate: got %v; want --kv-transfer-config in args refused", err)
	}

	env := buildEnv(map[string]string{"NOMAD_TASK_NAME": "p"}, nil, map[string]string{"VLLM_NIXL_SIDE_CHANNEL_HOST": "10.1.1.1"},
		sideChannelEnv(prefill, "10.0.0.5", 25600))
	want := []string{"NOMAD_TASK_NAME=p", "VLLM_NIXL_SIDE_CHANNEL_HOST=10.1.1.1", "VLLM_NIXL_SIDE_CHANNEL_PORT=25600"}
	if d := cmp.Diff(want, env); d != "" {
		t.Errorf("env: task env overrides the derived host (-want +got):\n%s", d)
	}
	if got := sideChannelEnv(prefill, "0.0.0.0", 25600); got["VLLM_NIXL_SIDE_CHANNEL_HOST"] != "" {
		t.Errorf("advertised 0.0.0.0 as the side-channel host: %v", got)
	}
	if got := sideChannelEnv(base, "10.0.0.5", 25600); got != nil {
		t.Errorf("agg task got side-channel env %v", got)
	}
}
