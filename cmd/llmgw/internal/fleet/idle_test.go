package fleet

import (
	"context"
	"testing"
)

// TestIdleShardsExact: shards with KV events that have served nothing are
// exact at every router before any request, holding no block, and the
// first request through each router is routed exact. Their engines have
// published no event yet: only the driver's announcement, made when each
// shard's listener came up, can tell the routers they hold nothing.
func TestIdleShardsExact(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, the driver, vllm-sim shards and routers")
	}
	o := options(t)
	o.Shards, o.Routers = 2, 1
	f, err := Start(context.Background(), o) // waits for exact, or fails
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, url := range f.RouterURLs() {
		v := view(t, f, url)
		for _, s := range f.Shards() {
			if got := v[s.ReplicaID]; got.Mode != "exact" || got.GPUBlocks != 0 {
				t.Errorf("%s sees idle shard %s as %+v; want exact, no blocks", url, s.ReplicaID, got)
			}
		}
		if a := complete(t, url, prompt(1)); a.code != 200 || a.mode != "exact" {
			t.Errorf("first request through %s: %d, mode %q; want 200, exact", url, a.code, a.mode)
		}
	}
}
