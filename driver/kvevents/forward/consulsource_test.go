package forward

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

func TestRouterEndpoints(t *testing.T) {
	got := RouterEndpoints([]consul.Router{
		{ID: "n1/r1", Address: "10.0.0.7", Port: 8080, IngestPort: 8081, Health: consul.HealthPassing},
		{ID: "n2/r1", Address: "fd00::1", Port: 8080, IngestPort: 9000, Health: consul.HealthCritical},
	})
	want := []RouterEndpoint{{ID: "n1/r1", URL: "http://10.0.0.7:8081", Ready: true}, {ID: "n2/r1", URL: "http://[fd00::1]:9000"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("endpoints %v; want %v", got, want)
	}
}

// TestForwarderWithConsul finds a router through a real Consul agent: the
// session starts once the router's check passes and stops when it
// deregisters.
func TestForwarderWithConsul(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Consul agent")
	}
	agent := consultest.Start(t)
	ctx := context.Background()
	w, err := consul.WatchRouters(ctx, agent.Client, consul.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	s := kvevents.NewStore()
	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{1, 2}, nil, kvtest.Toks(0, 8), 4))
	r := startRouter(t, "secret")
	f := forwarder(t, s, ConsulRouters{W: w}, "secret")

	u, err := url.Parse(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	svc := consul.RouterRegistration("router-1", "127.0.0.1", port, port)
	svc.Check.Interval = time.Second
	reg, err := consul.Register(ctx, agent.Client, svc)
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, r, s, "a")
	kvtest.Apply(s, "a", 0, kvtest.Removed(kvevents.MediumGPU, 2))
	waitMirror(t, r, s, "a")

	if err := reg.Deregister(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the session to stop", func() bool { return len(f.Status()) == 0 })
}

// TestForwarderReachesRouterBeforeItsCheck: the driver watches every
// registered router, so one whose check has not passed yet (Consul runs a
// new check first at a random point of its interval) gets the snapshot at
// once, long before the keep-alive.
func TestForwarderReachesRouterBeforeItsCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Consul agent")
	}
	agent := consultest.Start(t)
	ctx := context.Background()
	w, err := consul.Watch(ctx, agent.Client, consul.Query{Service: consul.RouterService}, consul.ConvertRegisteredRouters, consul.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	s := kvevents.NewStore()
	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{1, 2}, nil, kvtest.Toks(0, 8), 4))
	r := startRouter(t, "secret")
	f, err := Start(s, ConsulRouters{W: w}, Config{DriverID: "node-1", Token: "secret",
		FlushInterval: 10 * time.Millisecond, KeepAlive: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, err := url.Parse(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	// A TTL check nobody updates: critical for the whole test.
	err = agent.Client.Agent().ServiceRegister(&api.AgentServiceRegistration{
		ID: "router-1", Name: consul.RouterService, Address: "127.0.0.1", Port: port,
		Meta:  map[string]string{consul.MetaIngestPort: strconv.Itoa(port)},
		Check: &api.AgentServiceCheck{CheckID: "router-1-ttl", TTL: "1h", Status: api.HealthCritical},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, r, s, "a")
	// The router holds the snapshot once it has applied it, before its
	// answer reaches the forwarder, which counts the send only then: wait
	// for the count. Nothing else is sent (the store does not change, the
	// keep-alive is an hour away), so exactly one send, a snapshot.
	poll.Until(t, "the snapshot counted", func() bool { return first(f).Sent >= 1 })
	if st := first(f); st.Ready || st.Sent != 1 || st.Snapshots != 1 {
		t.Errorf("session %s; want one snapshot to a router not ready yet", counts(st))
	}

	// The check passes: nothing to resend the router does not hold, but
	// it might be a new process behind the same registration. Swap in an
	// empty one: the snapshot must come at once, not at the keep-alive.
	r.Swap(t, "secret")
	if err := agent.Client.Agent().UpdateTTL("router-1-ttl", "", api.HealthPassing); err != nil {
		t.Fatal(err)
	}
	waitMirror(t, r, s, "a")
	poll.Until(t, "the second snapshot counted", func() bool { return first(f).Snapshots == 2 })
}
