package driver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// Roles of a replica in a disaggregated fleet (the task config's role and
// the Consul meta llmgw-role).
const (
	RoleAgg     = "agg"     // aggregated: prefill and decode on the same engine
	RolePrefill = "prefill" // computes prompts' KV for decode replicas to pull
	RoleDecode  = "decode"  // pulls prompts' KV and generates
)

// kvRoles are vLLM's kv_role values.
var kvRoles = []string{"kv_producer", "kv_consumer", "kv_both"}

// disaggregated reports whether the task plays a P/D role.
func (t *TaskConfig) disaggregated() bool { return t.Role == RolePrefill || t.Role == RoleDecode }

// kvRole is the kv_role the engine gets: the task's kv_role, else kv_both,
// which serves either step whatever the replica is registered as.
func (t *TaskConfig) kvRole() string {
	if t.KVRole != "" {
		return t.KVRole
	}
	return "kv_both"
}

// validRole checks role, kv_role and side_channel_port against each other
// and the ports Nomad allocated.
func (t *TaskConfig) validRole(ports map[string]bool) error {
	switch t.Role {
	case RoleAgg, "": // "": a config decoded without the schema's default
		if t.KVRole != "" {
			return fmt.Errorf("kv_role: %q needs role prefill or decode; role is agg", t.KVRole)
		}
		return nil
	case RolePrefill, RoleDecode:
	default:
		return fmt.Errorf("role: want agg, prefill or decode, got %q", t.Role)
	}
	if t.KVRole != "" && !slices.Contains(kvRoles, t.KVRole) {
		return fmt.Errorf("kv_role: want kv_producer, kv_consumer or kv_both, got %q", t.KVRole)
	}
	if t.SideChannelPort == "" {
		return fmt.Errorf("side_channel_port: role %s needs the label of a group port for the NIXL side channel", t.Role)
	}
	if t.SideChannelPort == t.Port {
		return fmt.Errorf("side_channel_port: %q is the API's port; give the side channel a port of its own", t.SideChannelPort)
	}
	if !ports[t.SideChannelPort] {
		return fmt.Errorf("side_channel_port: no port labelled %q is allocated to this task", t.SideChannelPort)
	}
	if t.DataParallelSize > 1 {
		// vLLM listens on VLLM_NIXL_SIDE_CHANNEL_PORT + the data-parallel
		// rank; a Nomad port label is one port.
		return fmt.Errorf("data_parallel_size: %d ranks need %d side-channel ports, a port label gives one; run one data-parallel rank per %s task", t.DataParallelSize, t.DataParallelSize, t.Role)
	}
	if t.Shard != nil && t.Shard.Count > 1 {
		return fmt.Errorf("shard: a %s replica spans one node here; multi-node NIXL replicas are not supported", t.Role)
	}
	return nil
}

// kvTransferConfig is vLLM's --kv-transfer-config JSON for the task's role.
func kvTransferConfig(t TaskConfig) string {
	b, _ := json.Marshal(struct {
		Connector string `json:"kv_connector"`
		Role      string `json:"kv_role"`
	}{"NixlConnector", t.kvRole()}) // plain struct: cannot fail
	return string(b)
}

// sideChannelEnv is the NIXL side channel's environment: the allocated
// port, and the host decode replicas reach it on (the port's host IP, else
// the API's). Nil for an aggregated task.
func sideChannelEnv(t TaskConfig, host string, port int) map[string]string {
	if !t.disaggregated() || port == 0 {
		return nil
	}
	env := map[string]string{"VLLM_NIXL_SIDE_CHANNEL_PORT": strconv.Itoa(port)}
	if host != "" && host != "0.0.0.0" {
		env["VLLM_NIXL_SIDE_CHANNEL_HOST"] = host
	}
	return env
}
