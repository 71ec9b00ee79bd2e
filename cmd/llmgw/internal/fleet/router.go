package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// routerStartTimeout bounds a router's start, up to its registration.
const routerStartTimeout = 30 * time.Second

// routerGrace is how long a router may take to drain and deregister.
const routerGrace = 10 * time.Second

// router is one llmgw-router process.
type router struct {
	name      string
	p         *proc
	serviceID string
	url       string // http://127.0.0.1:port, known once registered
	adminURL  string // its admin listener, from the registration's meta
	killed    bool
}

// routerConf is what a router's config file says.
type routerConf struct {
	ConsulAddr string
	ServiceID  string
	Model      string
	Scheduler  string // body of the scheduler block; "" for the default
	// NomadAddr, when set, makes the router discover in Nomad's catalogue
	// there (discovery = "nomad") instead of Consul, on the listeners
	// Ports name (API, KV ingest, admin), as Nomad allocates them.
	NomadAddr string
	Ports     [3]int
	// Extra is top-level HCL appended as given (Options.RouterHCL, then
	// routing.hcl).
	Extra string
}

// routing is what a generation of routers is started with: the body of
// their scheduler block ("" for the default) and top-level HCL appended
// after Options.RouterHCL ("" for none), so that a benchmark policy can
// set router options beside the scheduler.
type routing struct {
	scheduler, hcl string
}

// routerConfig renders a router's HCL config: its three listeners on free
// loopback ports, the route headers on (the demo and the benchmark report
// which replica served each request; a trusted setup), replicas from Consul service vllm, registration as
// llmgw-router with a short check interval, the simulator's tokenizer for
// the model. The KV and peer tokens come from the environment, not the
// file.
func routerConfig(c routerConf) string {
	if c.NomadAddr != "" {
		return nomadRouterConfig(c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `listen        = "127.0.0.1:0"
ingest_listen = "127.0.0.1:0"
admin_listen  = "127.0.0.1:0"
log_level     = "info"

expose_route_headers = true

consul {
  address        = %q
  services       = ["vllm"]
  register       = true
  service_id     = %q
  check_interval = %q
}
`, c.ConsulAddr, c.ServiceID, checkInterval.String())
	writeModel(&b, c)
	return b.String()
}

// writeModel ends a router config with its model and scheduler blocks.
func writeModel(b *strings.Builder, c routerConf) {
	fmt.Fprintf(b, "\nmodel %q {\n  sim = true\n}\n", c.Model)
	if c.Scheduler != "" {
		fmt.Fprintf(b, "\nscheduler {\n%s\n}\n", c.Scheduler)
	}
	if c.Extra != "" {
		fmt.Fprintf(b, "\n%s\n", c.Extra)
	}
}

// startRouter writes name's config and starts it, returning once it has
// registered in the catalogue and its check passes, so that Consul DNS
// (or Nomad's catalogue) and `llmgw status` list it. (Drivers send it KV state as soon as it is
// registered, so it may route exact before that.)
func (f *Fleet) startRouter(ctx context.Context, name string, rt routing) (*router, error) {
	dir := filepath.Join(f.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r := &router{name: name, serviceID: "llmgw-" + name}
	path := filepath.Join(dir, "router.hcl")
	extra := strings.TrimSpace(f.o.RouterHCL + "\n" + rt.hcl)
	rc := routerConf{ServiceID: r.serviceID, Model: f.o.Model, Scheduler: rt.scheduler, Extra: extra}
	if err := f.cat.routerConf(&rc); err != nil {
		return nil, fmt.Errorf("%s config: %w", name, err)
	}
	if err := os.WriteFile(path, []byte(routerConfig(rc)), 0o644); err != nil {
		return nil, fmt.Errorf("%s config: %w", name, err)
	}
	// LLMGW_* variables would override the file; the fleet's routers take
	// only the two tokens and the clients' key from the environment.
	env := []string{"LLMGW_KV_TOKEN=" + f.token, "LLMGW_PEER_TOKEN=" + f.peerToken, "LLMGW_API_KEYS=" + f.o.APIKey}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LLMGW_") {
			env = append(env, kv)
		}
	}
	var err error
	r.p, err = startProc(name, filepath.Join(dir, "router.log"), []string{filepath.Join(f.o.BinDir, "llmgw-router"), "-config", path}, env)
	if err != nil {
		return nil, err
	}
	err = f.cat.routerUp(ctx, r, rc)
	if err != nil {
		r.p.kill()
		return nil, err
	}
	return r, nil
}

// stop ends the router gracefully (it deregisters itself), or kills it
// after routerGrace.
func (r *router) stop() { r.p.stop(routerGrace) }

// replicaView is one replica in a router's /admin/replicas.
type replicaView struct {
	ID        string `json:"id"`
	Mode      string `json:"mode"`
	GPUBlocks int    `json:"gpu_blocks"`
	CPUBlocks int    `json:"cpu_blocks"`
}

// AdminURL is the admin listener's base URL of the router whose API is at
// apiURL (one of RouterURLs); "" for none.
func (f *Fleet) AdminURL(apiURL string) string {
	for _, r := range f.liveRouters() {
		if r.url == apiURL {
			return r.adminURL
		}
	}
	return ""
}

// replicas reads /admin/replicas of the router at routerURL (its API), by
// replica id.
func (f *Fleet) replicas(ctx context.Context, routerURL string) (map[string]replicaView, error) {
	admin := f.AdminURL(routerURL)
	if admin == "" {
		return nil, fmt.Errorf("no live router at %s", routerURL)
	}
	return f.replicasAt(ctx, admin)
}

// replicasAt reads /admin/replicas from the admin listener at adminURL, by
// replica id.
func (f *Fleet) replicasAt(ctx context.Context, adminURL string) (map[string]replicaView, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/admin/replicas", nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/admin/replicas: %s", adminURL, resp.Status)
	}
	var body struct {
		Replicas []replicaView `json:"replicas"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET %s/admin/replicas: %w", adminURL, err)
	}
	out := make(map[string]replicaView, len(body.Replicas))
	for _, r := range body.Replicas {
		out[r.ID] = r
	}
	return out, nil
}

// waitRouters polls every live router until ok holds for its view of
// every running shard.
func (f *Fleet) waitRouters(ctx context.Context, what string, ok func(v replicaView, listed bool) bool) error {
	return poll(ctx, readyTimeout, what, func() error {
		for _, r := range f.liveRouters() {
			if r.p.exited() {
				return fmt.Errorf("%s exited:\n%s", r.name, r.p.tail())
			}
			views, err := f.replicas(ctx, r.url)
			if err != nil {
				return notYet("%s: %v", r.name, err)
			}
			for _, s := range f.runningShards() {
				v, listed := views[s.replica]
				if !ok(v, listed) {
					return notYet("%s sees %s as %+v (listed %v)", r.name, s.replica, v, listed)
				}
			}
		}
		return nil
	})
}

// waitExact waits until every live router routes every running shard in
// exact mode.
func (f *Fleet) waitExact(ctx context.Context) error {
	return f.waitRouters(ctx, "every router to see every shard in exact mode", func(v replicaView, listed bool) bool {
		return listed && v.Mode == "exact"
	})
}
