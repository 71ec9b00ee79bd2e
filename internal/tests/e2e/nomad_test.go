package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/forward"
	"github.com/llmgw/llmgw/driver/kvevents/intake"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/nomad"
	"github.com/llmgw/llmgw/nomad/nomadtest"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/server"
)

// The tests in this file run the Consul discovery tests (exact routing,
// deregistration, drain, peers) with discovery = "nomad" against the
// stand-in of Nomad's services API, registering replicas and routers as
// a Nomad client does for services with provider = "nomad".

const nomadToken = "e2e-nomad-acl"

// nomadFleet is fleet with Nomad's catalogue in place of Consul.
type nomadFleet struct {
	catalogue *nomadtest.Server
	sims      map[string]*sim
	ids       []string
}

// startNomadFleet runs one vllm-sim replica per entry of args, with those
// arguments, registered in the stand-in; with kvEvents their events flow
// through the driver's intake and forwarder to the routers it lists.
func startNomadFleet(t *testing.T, kvEvents bool, args ...[]string) *nomadFleet {
	t.Helper()
	f := &nomadFleet{catalogue: nomadtest.New(nomadToken), sims: map[string]*sim{}}
	if err := f.catalogue.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.catalogue.Close)
	store := kvevents.NewStore()
	for i, args := range args {
		id := fmt.Sprintf("alloc-%d/main", i)
		if kvEvents {
			in, err := intake.Open(intake.Config{Replica: id}, store)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = in.Close() })
			in.EngineRestarted()
			args = append([]string{"--kv-events-config", in.EngineFlag()}, args...)
		}
		s := startSim(t, args...)
		f.sims[id], f.ids = s, append(f.ids, id)
		f.registerReplica(t, id, kvEvents)
	}
	if !kvEvents {
		return f
	}
	client, err := nomad.NewClient(nomad.Config{Address: f.catalogue.Addr(), Token: nomadToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := nomad.WatchRegisteredRouters(ctx, client, nomad.WatchOptions{WaitTime: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fw, err := forward.Start(store, forward.WatchedRouters{W: w}, forward.Config{
		DriverID: "node-1", Token: token, FlushInterval: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fw.Close(); cancel(); w.Close() })
	return f
}

// alloc is the Nomad allocation id of replica id ("alloc-0/main").
func alloc(id string) string { return strings.Split(id, "/")[0] }

func nomadServiceID(id string) string { return "_nomad-task-" + alloc(id) + "-main-vllm-http" }

// registerReplica registers the replica as Nomad does from a jobspec's
// service with provider = "nomad": the meta as llmgw-*=value tags.
func (f *nomadFleet) registerReplica(t *testing.T, id string, kvEvents bool) {
	t.Helper()
	host, port, _ := net.SplitHostPort(f.sims[id].addr)
	p, _ := strconv.Atoi(port)
	f.catalogue.Register(nomadapi.ServiceRegistration{
		ID: nomadServiceID(id), ServiceName: "vllm", NodeID: "node-1", Datacenter: "dc1", JobID: "demo-sim", AllocID: alloc(id),
		Address: host, Port: p,
		Tags: []string{consul.ReplicaTag, consul.MetaModel + "=" + model, consul.MetaReplica + "=" + id,
			consul.MetaBlockSize + "=16", consul.MetaKVEvents + "=" + strconv.FormatBool(kvEvents)},
	})
	f.catalogue.SetCheck(alloc(id), nomadtest.Check{Check: "alive", Service: "vllm", Status: nomad.CheckSuccess, Group: "demo-sim.sim[0]"})
}

// router starts a router on Nomad discovery and registers it in the
// catalogue as Nomad registers jobs/llmgw-router.nomad.hcl's service.
func (f *nomadFleet) router(t *testing.T, name string, edit func(*config.Config), opts ...server.Option) *server.Server {
	t.Helper()
	c := routerConfig(token)
	c.Discovery = config.DiscoveryNomad
	c.Nomad = config.Nomad{Address: f.catalogue.Addr(), Token: nomadToken, Services: []string{"vllm"}}
	c.Scheduler = scheduler.Config{
		Filters: []scheduler.Spec{{Type: "model"}, {Type: "healthy"}},
		Scorers: []scheduler.Spec{{Type: "prefix", Weight: 2, Params: []byte(`{"speculative_ttl":"0s"}`)}, {Type: "load", Weight: 1}},
		Picker:  scheduler.Spec{Type: "max-score"},
	}
	if edit != nil {
		edit(&c)
	}
	r := startRouter(t, c, opts...)
	host, port, _ := net.SplitHostPort(r.Addr())
	p, _ := strconv.Atoi(port)
	_, ingest, _ := net.SplitHostPort(r.IngestAddr())
	id := "_nomad-task-" + name + "-router-llmgw-router-http"
	f.catalogue.Register(nomadapi.ServiceRegistration{
		ID: id, ServiceName: consul.RouterService, NodeID: "node-1", AllocID: name, Address: host, Port: p,
		Tags: []string{consul.MetaIngestPort + "=" + ingest},
	})
	f.catalogue.SetCheck(name, nomadtest.Check{Check: "health", Service: consul.RouterService, Status: nomad.CheckSuccess})
	t.Cleanup(func() { f.catalogue.Deregister(id) })
	return r
}

func TestExactRoutingWithNomadDiscovery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	fast := []string{"--sim-latency=false"}
	f := startNomadFleet(t, true, fast, fast, fast)
	r1 := f.router(t, "router-1", nil)
	poll.Until(t, "three replicas from nomad", func() bool { return len(r1.Replicas().ForModel(model)) == 3 })

	prompt := longPrompt(7)
	first := call(t, r1.Addr(), "/v1/completions", completion(prompt, false))
	if first.code != 200 {
		t.Fatalf("first request: %d %s", first.code, first.body)
	}
	home := first.replica
	waitExact(t, r1, home)
	waitCached(t, r1, prompt, home)
	for i := range 5 {
		a := call(t, r1.Addr(), "/v1/completions", completion(prompt, false))
		if a.code != 200 || a.replica != home || a.mode != "exact" || a.cached == 0 || cachedTokens(t, a.body) == 0 {
			t.Fatalf("repeat %d: %d on %q mode %q predicted %d; want 200 on %q, exact, > 0, engine-cached", i, a.code, a.replica, a.mode, a.cached, home)
		}
	}

	t.Run("second router gets a snapshot and routes the same", func(t *testing.T) {
		r2 := f.router(t, "router-2", nil)
		waitExact(t, r2, home)
		waitCached(t, r2, prompt, home)
		if a := call(t, r2.Addr(), "/v1/completions", completion(prompt, false)); a.replica != home || a.mode != "exact" {
			t.Errorf("router 2 sent the prompt to %q (%s); want %q exact", a.replica, a.mode, home)
		}
	})

	t.Run("deregistered replica receives nothing", func(t *testing.T) {
		if !f.catalogue.Deregister(nomadServiceID(home)) {
			t.Fatal("nothing deregistered")
		}
		poll.Until(t, "the replica to leave", func() bool { _, ok := r1.Replicas().Get(home); return !ok })
		before := f.sims[home].metric(t, "vllm:request_success_total")
		for i := range 6 {
			if a := call(t, r1.Addr(), "/v1/completions", completion(prompt, false)); a.code != 200 || a.replica == home {
				t.Fatalf("request %d: %d on %q; want 200 elsewhere", i, a.code, a.replica)
			}
		}
		if after := f.sims[home].metric(t, "vllm:request_success_total"); after != before {
			t.Errorf("deregistered replica served %v requests", after-before)
		}
	})
}

// TestDrainOnNomadReadiness: a failing readiness check (on_update =
// "ignore") drains the replica holding a prompt while its stream goes
// on; passing again it gets the prompt back warm; a failing healthiness
// check removes it.
func TestDrainOnNomadReadiness(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	slow := []string{"--sim-latency=true", "--sim-inter-token-latency", "10ms"}
	f := startNomadFleet(t, true, slow, slow, slow)
	r := f.router(t, "router-drain", nil)
	poll.Until(t, "three replicas", func() bool { return len(r.Replicas().ForModel(model)) == 3 })

	text := longPrompt(31)
	home := call(t, r.Addr(), "/v1/completions", completion(text, false)).replica
	waitExact(t, r, home)
	waitCached(t, r, text, home)
	ready := func(status string) {
		f.catalogue.SetCheck(alloc(home), nomadtest.Check{Check: "ready", Service: "vllm", Mode: nomad.ModeReadiness, Status: status})
	}
	ready(nomad.CheckSuccess)

	body, _ := json.Marshal(map[string]any{"model": model, "prompt": text, "max_tokens": 300, "stream": true})
	resp, err := http.Post("http://"+r.Addr()+"/v1/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := resp.Header.Get("X-Llmgw-Replica"); got != home {
		t.Fatalf("stream went to %q; want %q", got, home)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("first event %q, %v", line, err)
	}
	ready(nomad.CheckFailure)
	poll.Until(t, "home to drain", func() bool { rep, _ := r.Replicas().Get(home); return rep.Draining })
	rest, err := io.ReadAll(br)
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") || strings.Contains(string(rest), `"error"`) {
		t.Fatalf("in-flight stream after the drain began: %v, tail %q", err, string(rest)[max(0, len(rest)-200):])
	}
	if a := adminReplicas(t, r)[home]; !a.Draining || a.Health != "warning" || a.Mode != "exact" || a.GPUBlocks == 0 {
		t.Errorf("admin view of draining home: %+v; want draining, warning, exact, blocks kept", a)
	}
	before := f.sims[home].metric(t, "vllm:request_success_total")
	for i := range 6 {
		if a := call(t, r.Addr(), "/v1/completions", completion(longPrompt(40+i), false)); a.code != 200 || a.replica == home {
			t.Fatalf("request %d while draining: %d on %q; want 200 elsewhere", i, a.code, a.replica)
		}
	}
	if after := f.sims[home].metric(t, "vllm:request_success_total"); after != before {
		t.Errorf("draining replica served %v new requests", after-before)
	}

	ready(nomad.CheckSuccess)
	poll.Until(t, "home to resume", func() bool { rep, _ := r.Replicas().Get(home); return !rep.Draining })
	if a := call(t, r.Addr(), "/v1/completions", completion(text, false)); a.replica != home || a.mode != "exact" || cachedTokens(t, a.body) == 0 {
		t.Errorf("after resuming: on %q (%s), engine cached %d; want %s, exact, warm", a.replica, a.mode, cachedTokens(t, a.body), home)
	}

	f.catalogue.SetCheck(alloc(home), nomadtest.Check{Check: "alive", Service: "vllm", Status: nomad.CheckFailure})
	poll.Until(t, "home to leave when its healthiness check fails", func() bool { _, ok := r.Replicas().Get(home); return !ok })
}

// TestRoutersShareTheirLoadOnNomad: two routers find each other in
// Nomad's catalogue and weigh each other's in-flight requests, as
// TestRoutersShareTheirLoad does with Consul.
func TestRoutersShareTheirLoadOnNomad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	f := startNomadFleet(t, false, []string{"--sim-inter-token-latency=50ms"}, []string{"--sim-inter-token-latency=50ms"})
	start := func(name string, scrape time.Duration) *server.Server {
		r := f.router(t, name, func(c *config.Config) { c.PeerInterval, c.ScrapeInterval = 20*time.Millisecond, scrape })
		poll.Until(t, "two replicas from nomad", func() bool { return len(r.Replicas().ForModel(model)) == 2 })
		return r
	}
	a, b := start("router-a", 200*time.Millisecond), start("router-b", time.Hour)
	for _, r := range []*server.Server{a, b} {
		waitMetrics(t, r, "llmgw_peer_routers 1")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":400,"ignore_eos":true,"stream":true}`, model, longPrompt(1))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.Addr()+"/v1/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	busy := resp.Header.Get("X-Llmgw-Replica")
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("stream through A: %q, %v", line, err)
	}
	waitMetrics(t, b, fmt.Sprintf(`llmgw_replica_peer_in_flight{replica=%q} 1`, busy))
	for i := range 6 {
		got := call(t, b.Addr(), "/v1/completions", completion(longPrompt(100+i), false))
		if got.code != 200 || got.replica == busy {
			t.Fatalf("request %d through B went to %q (%d); want the replica A is not using", i, got.replica, got.code)
		}
		waitMetrics(t, b, fmt.Sprintf(`llmgw_replica_in_flight{replica=%q} 0`, got.replica))
	}
	cancel()
	waitMetrics(t, b, fmt.Sprintf(`llmgw_replica_peer_in_flight{replica=%q} 0`, busy))
	for _, r := range []*server.Server{a, b} {
		waitMetrics(t, r, `llmgw_peer_load_messages_total{result="own"} 0`)
	}
}
