package kvevents

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/poll"
)

func TestRouterEndpoints(t *testing.T) {
	got := RouterEndpoints([]consul.Router{
		{ID: "n1/r1", Address: "10.0.0.7", Port: 8080, IngestPort: 8081},
		{ID: "n2/r1", Address: "fd00::1", Port: 8080, IngestPort: 9000},
	})
	want := []RouterEndpoint{{ID: "n1/r1", URL: "http://10.0.0.7:8081"}, {ID: "n2/r1", URL: "http://[fd00::1]:9000"}}
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

	s := NewStore()
	apply(s, "a", 0, stored([]uint64{1, 2}, nil, toks(0, 8), 4))
	r := startRouter(t, "secret")
	f := forwarder(t, s, ConsulRouters{W: w}, "secret")

	u, err := url.Parse(r.srv.URL)
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
	apply(s, "a", 0, removed(MediumGPU, 2))
	waitMirror(t, r, s, "a")

	if err := reg.Deregister(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the session to stop", func() bool { return len(f.Status()) == 0 })
}
