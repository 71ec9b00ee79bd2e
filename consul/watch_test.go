package consul_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func registerReplica(t *testing.T, c *api.Client, id string, tags []string, meta map[string]string) {
	t.Helper()
	m := map[string]string{consul.MetaReplica: "alloc-" + id + "/vllm", consul.MetaModel: "qwen", consul.MetaKVEvents: "true"}
	for k, v := range meta {
		m[k] = v
	}
	err := c.Agent().ServiceRegister(&api.AgentServiceRegistration{
		ID: id, Name: "vllm", Address: "127.0.0.1", Port: 8000, Tags: tags, Meta: m,
		Check: &api.AgentServiceCheck{CheckID: "ttl-" + id, TTL: "1h", Status: api.HealthPassing},
	})
	if err != nil {
		t.Fatalf("register %s: %v", id, err)
	}
}

func replicaIDs(w *consul.Watcher[consul.Replica]) []string {
	set, _ := w.Current()
	ids := make([]string, 0, len(set))
	for _, r := range set {
		ids = append(ids, r.ID)
	}
	return ids
}

func equal(a []string, b ...string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWatchReplicas(t *testing.T) {
	agent := consultest.Start(t)
	ctx := context.Background()
	w, err := consul.WatchReplicas(ctx, agent.Client, "vllm", consul.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	poll.Until(t, "first sync", func() bool { _, ok := w.Current(); return ok })
	if ids := replicaIDs(w); len(ids) != 0 {
		t.Fatalf("empty catalog: got replicas %v", ids)
	}

	registerReplica(t, agent.Client, "a", []string{consul.ReplicaTag}, map[string]string{consul.MetaBlockSize: "32"})
	registerReplica(t, agent.Client, "b", []string{consul.ReplicaTag}, nil)
	registerReplica(t, agent.Client, "untagged", nil, nil)
	registerReplica(t, agent.Client, "bad", []string{consul.ReplicaTag}, map[string]string{consul.MetaBlockSize: "x"})
	poll.Until(t, "replicas a and b", func() bool { return equal(replicaIDs(w), "alloc-a/vllm", "alloc-b/vllm") })
	set, _ := w.Current()
	if set[0].BlockSize != 32 || !set[0].KVEvents || set[0].Model != "qwen" || set[0].Port != 8000 {
		t.Errorf("replica a = %+v; want block size 32, kv events, model qwen, port 8000", set[0])
	}

	// A check going critical removes the instance; passing brings it back.
	if err := agent.Client.Agent().UpdateTTL("ttl-a", "engine down", api.HealthCritical); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a to leave when critical", func() bool { return equal(replicaIDs(w), "alloc-b/vllm") })
	if err := agent.Client.Agent().UpdateTTL("ttl-a", "", api.HealthPassing); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a to return when passing", func() bool { return equal(replicaIDs(w), "alloc-a/vllm", "alloc-b/vllm") })

	// Deregistration removes it, and the consumer is woken.
	drain(w.Changed())
	if err := agent.Client.Agent().ServiceDeregister("b"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Changed():
	case <-time.After(poll.Timeout):
		t.Fatal("no wake-up after deregistration")
	}
	poll.Until(t, "b to leave when deregistered", func() bool { return equal(replicaIDs(w), "alloc-a/vllm") })
	if st := w.Status(); !st.Synced || st.Index == 0 || st.ConsecutiveErrors != 0 {
		t.Errorf("status = %+v; want synced, nonzero index, no errors", st)
	}
}

// TestWatchSkipsUnchanged: blocking queries that time out, or return for an
// unrelated change, wake nobody.
func TestWatchSkipsUnchanged(t *testing.T) {
	agent := consultest.Start(t)
	registerReplica(t, agent.Client, "a", []string{consul.ReplicaTag}, nil)
	w, err := consul.WatchReplicas(context.Background(), agent.Client, "vllm", consul.WatchOptions{WaitTime: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	poll.Until(t, "replica a", func() bool { return equal(replicaIDs(w), "alloc-a/vllm") })
	<-w.Changed() // the first sync
	// An unrelated service bumps Consul's index but not this set.
	if err := agent.Client.Agent().ServiceRegister(&api.AgentServiceRegistration{ID: "other", Name: "other", Port: 1}); err != nil {
		t.Fatal(err)
	}
	q := w.Status().Queries
	poll.Until(t, "three more queries", func() bool { return w.Status().Queries >= q+3 })
	select {
	case <-w.Changed():
		t.Error("woken although the set did not change")
	default:
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestWatchSurvivesOutage stops the agent: the watcher keeps the last known
// set and backs off; a new agent on the same address is picked up.
func TestWatchSurvivesOutage(t *testing.T) {
	agent := consultest.Start(t)
	w, err := consul.WatchReplicas(context.Background(), agent.Client, "vllm", consul.WatchOptions{
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	registerReplica(t, agent.Client, "a", []string{consul.ReplicaTag}, nil)
	poll.Until(t, "replica a", func() bool { return equal(replicaIDs(w), "alloc-a/vllm") })

	agent.Stop()
	poll.Until(t, "repeated errors", func() bool { return w.Status().ConsecutiveErrors >= 3 })
	if ids := replicaIDs(w); !equal(ids, "alloc-a/vllm") {
		t.Errorf("during outage got %v; want the last known set [alloc-a/vllm]", ids)
	}
	if st := w.Status(); !st.Synced || st.LastError == nil {
		t.Errorf("status during outage = %+v; want synced with a last error", st)
	}

	agent.Restart(t)
	registerReplica(t, agent.Client, "c", []string{consul.ReplicaTag}, nil)
	poll.Until(t, "recovery with the new agent's set", func() bool { return equal(replicaIDs(w), "alloc-c/vllm") })
	if st := w.Status(); st.ConsecutiveErrors != 0 || st.LastError != nil {
		t.Errorf("status after recovery = %+v; want no errors", st)
	}
}

// TestRouterRegistration registers a router with an HTTP check and watches
// it as a driver would.
func TestRouterRegistration(t *testing.T) {
	agent := consultest.Start(t)
	var healthy atomic.Bool
	healthy.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" || !healthy.Load() {
			http.Error(w, "unhealthy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())

	ctx := context.Background()
	w, err := consul.WatchRouters(ctx, agent.Client, consul.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	svc := consul.RouterRegistration("router-1", "127.0.0.1", port, 9123)
	svc.Check.Interval = time.Second
	reg, err := consul.Register(ctx, agent.Client, svc)
	if err != nil {
		t.Fatal(err)
	}
	routers := func() []consul.Router { set, _ := w.Current(); return set }
	poll.Until(t, "router to pass its check", func() bool { return len(routers()) == 1 })
	if r := routers()[0]; r.IngestPort != 9123 || r.Port != port || r.Address != "127.0.0.1" {
		t.Errorf("router = %+v; want 127.0.0.1:%d with ingest port 9123", r, port)
	}

	// Clients find routers through the agent's DNS interface.
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, agent.DNSAddr)
	}}
	_, srvs, err := res.LookupSRV(ctx, "", "", consul.RouterService+".service.consul")
	if err != nil {
		t.Fatalf("DNS SRV lookup of %s.service.consul: %v", consul.RouterService, err)
	}
	if len(srvs) != 1 || int(srvs[0].Port) != port {
		t.Errorf("SRV records %+v; want one with port %d", srvs, port)
	}
	addrs, err := res.LookupHost(ctx, consul.RouterService+".service.consul")
	if err != nil || len(addrs) != 1 || addrs[0] != "127.0.0.1" {
		t.Errorf("DNS A lookup = %v, %v; want [127.0.0.1]", addrs, err)
	}

	healthy.Store(false)
	poll.Until(t, "router to leave when /health fails", func() bool { return len(routers()) == 0 })
	healthy.Store(true)
	poll.Until(t, "router to return", func() bool { return len(routers()) == 1 })

	// Registering again is idempotent: still one instance.
	if _, err := consul.Register(ctx, agent.Client, svc); err != nil {
		t.Fatalf("second register: %v", err)
	}
	if err := reg.Deregister(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "router to leave on deregistration", func() bool { return len(routers()) == 0 })
	svcs, err := agent.Client.Agent().Services()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := svcs["router-1"]; ok {
		t.Error("router-1 still registered with the agent after Deregister")
	}
}
