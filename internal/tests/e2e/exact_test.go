package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/forward"
	"github.com/llmgw/llmgw/driver/kvevents/intake"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/server"
)

const token = "e2e-secret"

// fleet is simulated replicas whose KV events flow through the real
// driver intake and forwarder to every router registered in Consul.
type fleet struct {
	agent *consultest.Agent
	sims  map[string]*sim // by replica id
	ids   []string
	store *kvevents.Store // the driver's block state
	// intakes are the driver's event listeners, by replica id.
	intakes map[string]*intake.Intake
	// dp is each replica's data-parallel size when over 1, by replica id.
	dp map[string]int
}

// startFleet runs three replicas of sim-model.
func startFleet(t *testing.T) *fleet { return startFleetWith(t, nil, nil, nil) }

// startFleetWith runs one replica per entry of extra, each with those
// extra vllm-sim arguments.
func startFleetWith(t *testing.T, extra ...[]string) *fleet {
	t.Helper()
	specs := make([]replicaSpec, len(extra))
	for i, args := range extra {
		specs[i] = replicaSpec{args: args}
	}
	return startFleetSpecs(t, specs...)
}

// replicaSpec is one replica of a fleet: its extra vllm-sim arguments and
// its data-parallel ranks (0 means 1), each with its own event listener in
// the driver's intake, as the driver opens them for data_parallel_size.
type replicaSpec struct {
	args []string
	dp   int
}

// startFleetSpecs runs one replica per spec.
func startFleetSpecs(t *testing.T, specs ...replicaSpec) *fleet {
	t.Helper()
	f := &fleet{agent: consultest.Start(t), sims: map[string]*sim{}, store: kvevents.NewStore(), intakes: map[string]*intake.Intake{}, dp: map[string]int{}}
	store := f.store
	for i, spec := range specs {
		id, args := fmt.Sprintf("alloc-%d/main", i), spec.args
		if spec.dp > 1 {
			args = append([]string{"--data-parallel-size", strconv.Itoa(spec.dp)}, args...)
		}
		in, err := intake.Open(intake.Config{Replica: id, DataParallelSize: spec.dp}, store)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = in.Close() })
		in.EngineRestarted() // as the driver does before it starts an engine: the replica is announced empty
		s := startSim(t, append([]string{"--sim-latency=false", "--kv-events-config", in.EngineFlag()}, args...)...)
		f.sims[id], f.ids, f.intakes[id], f.dp[id] = s, append(f.ids, id), in, spec.dp
		f.register(t, id)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := consul.WatchRouters(ctx, f.agent.Client, consul.WatchOptions{WaitTime: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fw, err := forward.Start(store, forward.ConsulRouters{W: w}, forward.Config{
		DriverID: "node-1", Token: token, FlushInterval: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fw.Close(); cancel(); w.Close() })
	return f
}

func (f *fleet) register(t *testing.T, id string) {
	t.Helper()
	registerReplicaDP(t, f.agent.Client, id, f.sims[id], true, f.dp[id])
}

// registerReplica registers s in Consul as replica id of model, as Nomad
// does from a jobspec's service: service "vllm" (serviceID(id)), tag
// llmgw, the replica meta, and whether its KV events reach the routers.
func registerReplica(t *testing.T, client *api.Client, id string, s *sim, kvEvents bool) {
	t.Helper()
	registerReplicaDP(t, client, id, s, kvEvents, 0)
}

// registerReplicaDP is registerReplica declaring dp data-parallel ranks
// (llmgw-data-parallel-size) when dp is over 1.
func registerReplicaDP(t *testing.T, client *api.Client, id string, s *sim, kvEvents bool, dp int) {
	t.Helper()
	host, port, _ := net.SplitHostPort(s.addr)
	p, _ := strconv.Atoi(port)
	meta := map[string]string{consul.MetaModel: model, consul.MetaReplica: id, consul.MetaBlockSize: "16", consul.MetaKVEvents: strconv.FormatBool(kvEvents)}
	if dp > 1 {
		meta[consul.MetaDataParallelSize] = strconv.Itoa(dp)
	}
	err := client.Agent().ServiceRegister(&api.AgentServiceRegistration{
		ID: serviceID(id), Name: "vllm", Tags: []string{consul.ReplicaTag}, Address: host, Port: p, Meta: meta,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fleet) router(t *testing.T, serviceID string) *server.Server {
	t.Helper()
	return f.routerWith(t, serviceID, nil)
}

// routerWith is router with edit applied to its configuration.
func (f *fleet) routerWith(t *testing.T, serviceID string, edit func(*config.Config)) *server.Server {
	t.Helper()
	c := routerConfig(token)
	c.Consul.Address = f.agent.Addr
	c.Consul.Services = []string{"vllm"}
	c.Consul.Register = true
	c.Consul.ServiceID = serviceID
	c.Consul.CheckInterval = time.Second
	// No speculative credit: a hit must come from the engine's KV events.
	c.Scheduler = scheduler.Config{
		Filters: []scheduler.Spec{{Type: "model"}, {Type: "healthy"}},
		Scorers: []scheduler.Spec{{Type: "prefix", Weight: 2, Params: []byte(`{"speculative_ttl":"0s"}`)}, {Type: "load", Weight: 1}},
		Picker:  scheduler.Spec{Type: "max-score"},
	}
	if edit != nil {
		edit(&c)
	}
	return startRouter(t, c)
}

// waitExact waits until r routes every listed replica in exact mode.
func waitExact(t *testing.T, r *server.Server, ids ...string) {
	t.Helper()
	poll.Until(t, "replicas in exact mode", func() bool {
		for _, id := range ids {
			if r.Replicas().Mode(id) != scheduler.ModeExact {
				return false
			}
		}
		return true
	})
}

// waitCached waits until r predicts the prompt cached on replica, from KV
// events alone.
func waitCached(t *testing.T, r *server.Server, prompt, replica string) {
	t.Helper()
	poll.Until(t, "the prompt's blocks in the router's index", func() bool {
		e := explain(t, r.AdminAddr(), completion(prompt, false))
		return e.Chosen.Replica == replica && e.Chosen.Mode == "exact" && e.Chosen.CachedTokens > 0
	})
}

func TestExactRoutingWithConsulAndDrivers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f := startFleet(t)
	r1 := f.router(t, "router-1")
	poll.Until(t, "three replicas from consul", func() bool { return len(r1.Replicas().ForModel(model)) == 3 })

	prompt := longPrompt(7)
	first := call(t, r1.Addr(), "/v1/completions", completion(prompt, false))
	if first.code != 200 {
		t.Fatalf("first request: %d %s", first.code, first.body)
	}
	// A replica is exact once its driver has reported blocks for it.
	home := first.replica
	waitExact(t, r1, home)
	waitCached(t, r1, prompt, home)
	for i := range 5 {
		a := call(t, r1.Addr(), "/v1/completions", completion(prompt, false))
		if a.code != 200 || a.replica != home || a.mode != "exact" || a.cached == 0 {
			t.Fatalf("repeat %d: %d on %q mode %q predicted %d; want 200 on %q, exact, > 0", i, a.code, a.replica, a.mode, a.cached, home)
		}
		if cachedTokens(t, a.body) == 0 {
			t.Errorf("repeat %d: replica %s reports no cached tokens", i, home)
		}
	}

	outer := t
	t.Run("second router gets a snapshot and routes the same", func(t *testing.T) {
		r2 := f.router(t, "router-2")
		waitExact(t, r2, home)
		waitCached(t, r2, prompt, home)
		if a := call(t, r2.Addr(), "/v1/completions", completion(prompt, false)); a.replica != home || a.mode != "exact" {
			t.Errorf("router 2 sent the prompt to %q (%s); want %q exact", a.replica, a.mode, home)
		}
		t.Run("consul DNS resolves both routers", func(t *testing.T) {
			res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, f.agent.DNSAddr)
			}}
			want := []uint16{port(t, r1.Addr()), port(t, r2.Addr())}
			slices.Sort(want)
			poll.Until(t, "SRV records of both routers", func() bool {
				_, srvs, err := res.LookupSRV(context.Background(), "", "", "llmgw-router.service.consul")
				if err != nil {
					return false
				}
				var got []uint16
				for _, s := range srvs {
					got = append(got, s.Port)
				}
				slices.Sort(got)
				return slices.Equal(got, want)
			})
			addrs, err := res.LookupHost(context.Background(), "llmgw-router.service.consul")
			if err != nil || !slices.Contains(addrs, "127.0.0.1") {
				t.Errorf("A lookup: %v %v; want 127.0.0.1", addrs, err)
			}
		})
	})

	t.Run("restarted router routes as before", func(t *testing.T) {
		r1.Close()
		r3 := f.router(outer, "router-1") // lives on for the next step
		waitExact(t, r3, home)
		waitCached(t, r3, prompt, home)
		if a := call(t, r3.Addr(), "/v1/completions", completion(prompt, false)); a.replica != home || a.mode != "exact" {
			t.Errorf("restarted router sent the prompt to %q (%s); want %q exact", a.replica, a.mode, home)
		}
		r1 = r3
	})

	t.Run("deregistered replica receives nothing", func(t *testing.T) {
		if err := f.agent.Client.Agent().ServiceDeregister(serviceID(home)); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, "the replica to leave", func() bool { _, ok := r1.Replicas().Get(home); return !ok })
		before := f.sims[home].metric(t, "vllm:request_success_total")
		for i := range 6 {
			a := call(t, r1.Addr(), "/v1/completions", completion(prompt, false))
			if a.code != 200 || a.replica == home {
				t.Fatalf("request %d: %d on %q; want 200 elsewhere", i, a.code, a.replica)
			}
		}
		if after := f.sims[home].metric(t, "vllm:request_success_total"); after != before {
			t.Errorf("deregistered replica served %v requests", after-before)
		}
	})
}

func port(t *testing.T, addr string) uint16 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return uint16(n)
}

// serviceID is the Consul service id of a replica (no slash: Consul's agent
// endpoints take the id as a path segment).
func serviceID(replica string) string { return "vllm-" + strings.ReplaceAll(replica, "/", "-") }
