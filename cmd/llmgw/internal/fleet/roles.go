package fleet

import (
	"fmt"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// sideChannelLabel is the group port a prefill or decode shard's NIXL side
// channel listens on, as jobs/demo-sim-pd.nomad.hcl names it.
const sideChannelLabel = "nixl"

// roleOf is shard i's role in a disaggregated fleet: Options.Roles[i], or
// "" (aggregated) past its end.
func (o Options) roleOf(i int) string {
	if i < len(o.Roles) {
		return o.Roles[i]
	}
	return ""
}

// validRoles checks Options.Roles: at most one per shard, each one the
// driver's task config takes.
func (o Options) validRoles() error {
	if len(o.Roles) > o.Shards {
		return fmt.Errorf("fleet: %d Roles for %d Shards", len(o.Roles), o.Shards)
	}
	for i, r := range o.Roles {
		switch r {
		case "", "agg", "prefill", "decode":
		default:
			return fmt.Errorf("fleet: Roles[%d] %q: want agg, prefill or decode", i, r)
		}
	}
	return nil
}

// disaggregated reports whether the role is prefill or decode.
func disaggregated(role string) bool { return role == "prefill" || role == "decode" }

// withRole adds what a prefill or decode shard's task needs: its role, a
// port for the side channel (ports[1]) and the task config naming it, as
// jobs/demo-sim-pd.nomad.hcl does. The engine's kv_role stays the driver's
// default, kv_both.
func withRole(role string, ports []int, mappings []*drivers.PortMapping, config map[string]any) []*drivers.PortMapping {
	if !disaggregated(role) {
		return mappings
	}
	config["role"] = role
	config["side_channel_port"] = sideChannelLabel
	return append(mappings, &drivers.PortMapping{Label: sideChannelLabel, Value: int32(ports[1]), HostIp: "127.0.0.1"})
}
