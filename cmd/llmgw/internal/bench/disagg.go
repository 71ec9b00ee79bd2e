package bench

import (
	"context"
	"fmt"
	"slices"
)

// pdPolicy is the disaggregated policy: the router's default scheduler
// (precise-prefix) on as many shards as the others, half with the prefill
// role, half with the decode role, which the router serves in two steps.
// Compare it with precise-prefix, on long prompts.
const pdPolicy = "disaggregated"

func pdPolicies() []Policy { return []Policy{{Name: pdPolicy}} }

// disaggregated reports whether p runs on prefill and decode shards.
func (p Policy) disaggregated() bool { return p.Name == pdPolicy }

// pdRoles are the roles of a disaggregated fleet of n shards: the first
// half prefill, the rest decode (one of each at least), so that the
// disaggregated policy runs on as many engines as the aggregated ones.
func pdRoles(n int) []string {
	prefill := max(n/2, 1)
	roles := make([]string, n)
	for i := range roles {
		roles[i] = "decode"
		if i < prefill {
			roles[i] = "prefill"
		}
	}
	return roles
}

// reshard gives the fleet's shards the roles policy p runs on, restarting
// them only when those differ from current (what they have now), and
// returns the roles they have after.
func reshard(ctx context.Context, f Fleet, p Policy, current []string, shards int) ([]string, error) {
	var want []string
	if p.disaggregated() {
		if shards < 2 {
			return current, fmt.Errorf("the disaggregated policy needs at least 2 shards (one prefill, one decode), have %d", shards)
		}
		want = pdRoles(shards)
	}
	if slices.Equal(want, current) {
		return current, nil
	}
	if err := f.RestartShards(ctx, want); err != nil {
		return current, fmt.Errorf("restart shards with roles %v: %w", want, err)
	}
	return want, nil
}
