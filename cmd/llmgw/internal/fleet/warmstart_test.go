package fleet

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/internal/localproc/netport"
)

// joinRouter starts a router the way Nomad runs the shipped router job:
// the router does not register itself, the test registers it (as Nomad
// does from the jobspec's service block) once its API serves, with a TTL
// check nobody updates, so it stays critical, as a new router's check is
// until Consul first runs it (at a random point of its interval, up to
// 10 s in the shipped jobspec). It returns the router's API and admin URLs
// and when it was registered; the router stops when the test ends.
func joinRouter(t *testing.T, f *Fleet, name string) (apiURL, adminURL string, registered time.Time) {
	t.Helper()
	ports, err := netport.FreeTCPs(3)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`listen        = "127.0.0.1:%d"
ingest_listen = "127.0.0.1:%d"
admin_listen  = "127.0.0.1:%d"
log_level     = "info"
api_keys      = [%q]
expose_route_headers = true

consul {
  address  = %q
  services = ["vllm"]
  register = false
}

model %q {
  sim = true
}
`, ports[0], ports[1], ports[2], f.APIKey(), f.consul.httpAddr, f.o.Model)
	path := filepath.Join(dir, "router.hcl")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := startProc(name, filepath.Join(dir, "router.log"), []string{filepath.Join(f.o.BinDir, "llmgw-router"), "-config", path},
		append(os.Environ(), "LLMGW_KV_TOKEN="+f.token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop(routerGrace) })
	url := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	waitFor(t, name+" to serve", func() bool {
		resp, err := testClient.Get(url + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	a := f.consul.client.Agent()
	id := "llmgw-" + name
	err = a.ServiceRegister(&api.AgentServiceRegistration{
		ID: id, Name: consul.RouterService, Address: "127.0.0.1", Port: ports[0],
		Meta:  map[string]string{consul.MetaIngestPort: strconv.Itoa(ports[1])},
		Check: &api.AgentServiceCheck{CheckID: id + "-ttl", TTL: "1h", Status: api.HealthCritical},
	})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	t.Cleanup(func() { _ = a.ServiceDeregister(id) })
	return url, "http://127.0.0.1:" + strconv.Itoa(ports[2]), at
}

// TestNewRouterExactAtOnce: a router that joins a running fleet routes
// every shard exact as soon as it is registered in Consul, before its
// check passes and whatever the driver's keep-alive (an hour here, so only
// the driver's reaction to the new registration can bring the snapshot
// within the wait). It logs the median time from registration to exact
// over five routers joining one after another.
func TestNewRouterExactAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, the driver, vllm-sim shards and routers")
	}
	o := options(t)
	o.Shards, o.Routers, o.KeepAlive = 2, 1, time.Hour
	f, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var took []time.Duration
	for i := range 5 {
		url, admin, registered := joinRouter(t, f, "joiner-"+strconv.Itoa(i))
		waitFor(t, "the new router to see every shard exact", func() bool {
			v, err := f.replicasAt(context.Background(), admin)
			if err != nil {
				return false
			}
			for _, s := range f.Shards() {
				if v[s.ReplicaID].Mode != "exact" {
					return false
				}
			}
			return true
		})
		took = append(took, time.Since(registered))
		if a := complete(t, url, prompt(i)); a.code != 200 || a.mode != "exact" {
			t.Errorf("first request through router %d: %d, mode %q; want 200, exact", i, a.code, a.mode)
		}
	}
	slices.Sort(took)
	t.Logf("registration to exact for a new router: median %s over %d routers (%v)", took[len(took)/2], len(took), took)
}
