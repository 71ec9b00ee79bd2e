package fleet

import (
	"context"
	"slices"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet/fleettest"
	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/nomad"
	"github.com/llmgw/llmgw/router/config"
)

// TestFleetOnNomad runs the chain on Nomad discovery (no Consul): the
// registrations follow the Nomad jobspecs, every router routes every shard
// exact and sends a cached prompt to the shard holding it, a stopped shard
// leaves the catalogue and the routers, and Close leaves nothing behind.
func TestFleetOnNomad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the driver, vllm-sim shards and routers")
	}
	o := options(t)
	o.Discovery = DiscoveryNomad
	ctx := context.Background()
	f, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			f.Close()
		}
	}()
	if f.ConsulDNSAddr() != "" || f.consul != nil || f.NomadAddr() == "" {
		t.Fatalf("consul %q, nomad %q; want no Consul and a Nomad stand-in", f.ConsulDNSAddr(), f.NomadAddr())
	}
	client, err := nomad.NewClient(nomad.Config{Address: f.NomadAddr()})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, s := range f.Shards() {
		ids[s.ReplicaID] = true
	}

	t.Run("registrations carry the jobspecs' tags, checks pass", func(t *testing.T) {
		regs, _, err := client.Services().Get("vllm", nil)
		if err != nil || len(regs) != 3 {
			t.Fatalf("vllm registrations %v, %v; want 3", regs, err)
		}
		for _, r := range regs {
			meta := nomad.MetaFromTags(r.Tags)
			if !slices.Contains(r.Tags, "llmgw") || !ids[meta["llmgw-replica"]] || meta["llmgw-model"] != "sim-model" ||
				meta["llmgw-block-size"] != "16" || meta["llmgw-kv-events"] != "true" {
				t.Errorf("replica registration %s tags %v; want demo-sim-nomad.nomad.hcl's", r.ID, r.Tags)
			}
			checkPasses(t, client, r)
		}
		routers, _, err := client.Services().Get("llmgw-router", nil)
		if err != nil || len(routers) != 2 {
			t.Fatalf("llmgw-router registrations %v, %v; want 2", routers, err)
		}
		for _, r := range routers {
			meta := nomad.MetaFromTags(r.Tags)
			if meta["llmgw-kv-ingest-port"] == "" || meta["llmgw-admin-port"] == "" || !slices.Contains(r.Tags, "http") {
				t.Errorf("router registration %s tags %v; want llmgw-router-nomad.nomad.hcl's", r.ID, r.Tags)
			}
			checkPasses(t, client, r)
		}
	})

	t.Run("each router routes exact, a cached prompt goes home", func(t *testing.T) {
		for i, url := range f.RouterURLs() {
			v := view(t, f, url)
			for id := range ids {
				if v[id].Mode != "exact" || v[id].GPUBlocks != 0 {
					t.Errorf("router %d sees %s as %+v; want exact and empty after Start", i, id, v[id])
				}
			}
		}
		urls := f.RouterURLs()
		first := complete(t, urls[0], prompt(300))
		if first.code != 200 || !ids[first.replica] || first.mode != "exact" {
			t.Fatalf("first request: %d from %q (%s) %s; want 200 from a shard, exact", first.code, first.replica, first.mode, first.body)
		}
		// The driver tells every router (found in Nomad's catalogue)
		// what the shard now holds.
		waitFor(t, "both routers to index the prompt's blocks", func() bool {
			for _, url := range urls {
				if view(t, f, url)[first.replica].GPUBlocks == 0 {
					return false
				}
			}
			return true
		})
		if a := complete(t, urls[1], prompt(300)); a.code != 200 || a.replica != first.replica {
			t.Errorf("the other router sent the cached prompt to %q (%d); want its home %q", a.replica, a.code, first.replica)
		}
	})

	t.Run("a stopped shard leaves the catalogue and the routers", func(t *testing.T) {
		gone := f.Shards()[0].ReplicaID
		if err := f.StopShard(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if regs, _, err := client.Services().Get("vllm", nil); err != nil || len(regs) != 2 {
			t.Errorf("vllm registrations after the stop: %d, %v; want 2", len(regs), err)
		}
		for _, url := range f.RouterURLs() {
			if _, listed := view(t, f, url)[gone]; listed {
				t.Errorf("router %s still lists the stopped shard %s", url, gone)
			}
			if a := complete(t, url, prompt(301)); a.code != 200 || a.replica == gone {
				t.Errorf("router %s after the stop: %d from %q; want 200 from another shard", url, a.code, a.replica)
			}
		}
	})

	closed = true
	if err := f.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	fleettest.CheckNone(t, o.WorkDir)
	goleak.VerifyNone(t)
}

// checkPasses fails the test unless r's allocation reports its check as
// a Nomad client would: the service's, passing.
func checkPasses(t *testing.T, client *nomadapi.Client, r *nomadapi.ServiceRegistration) {
	t.Helper()
	checks, err := client.Allocations().Checks(r.AllocID, nil)
	if err != nil {
		t.Fatalf("checks of %s: %v", r.AllocID, err)
	}
	if len(checks) != 1 || nomad.Health(r.ServiceName, checks) != consul.HealthPassing {
		t.Errorf("checks of %s (%s): %+v; want one, passing", r.AllocID, r.ServiceName, checks)
	}
}

// TestNomadRouterConfigLoads: the config a router gets on Nomad discovery
// loads with the router's strict loader, listens where the fleet
// registered it and reads the stand-in.
func TestNomadRouterConfigLoads(t *testing.T) {
	src := routerConfig(routerConf{NomadAddr: "http://127.0.0.1:4646", Ports: [3]int{18080, 18081, 18082}, Model: "sim-model", Scheduler: ""})
	c := config.Default()
	if err := c.ParseHCL([]byte(src), "router.hcl"); err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("validate: %v\n%s", err, src)
	}
	if c.Listen != "127.0.0.1:18080" || c.IngestListen != "127.0.0.1:18081" || c.HTTP.AdminListen != "127.0.0.1:18082" {
		t.Errorf("listen %q, ingest %q, admin %q; want the allocated ports", c.Listen, c.IngestListen, c.HTTP.AdminListen)
	}
	if c.Discovery != config.DiscoveryNomad || c.Nomad.Address != "http://127.0.0.1:4646" || !slices.Equal(c.Nomad.Services, []string{"vllm"}) {
		t.Errorf("discovery %q, nomad %+v; want nomad at the stand-in, services [vllm]", c.Discovery, c.Nomad)
	}
	if c.Consul.Register {
		t.Errorf("consul %+v; want no Consul registration on Nomad", c.Consul)
	}
}
