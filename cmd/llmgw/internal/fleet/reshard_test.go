package fleet

import (
	"context"
	"strings"
	"testing"
)

// TestRestartShardsStopsEveryOldShard: a shard whose deregistration fails
// (its Consul service is gone already) does not keep RestartShards from
// stopping the others: it fails naming that shard, and no engine of the
// old shards is left running, though the fleet no longer lists them for
// Close to stop.
func TestRestartShardsStopsEveryOldShard(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, the driver, vllm-sim shards and a router")
	}
	o := options(t)
	o.Shards, o.Routers = 2, 1
	f, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pids := enginePids(f)
	first := f.shards[0]
	if err := f.consul.client.Agent().ServiceDeregister(first.serviceID); err != nil {
		t.Fatal(err)
	}
	err = f.RestartShards(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), first.serviceID) {
		t.Fatalf("RestartShards = %v; want the failed deregistration of %s", err, first.serviceID)
	}
	for i, pid := range pids {
		if alive(pid) {
			t.Errorf("old shard %d's engine %d still runs after RestartShards failed", i, pid)
		}
	}
}
