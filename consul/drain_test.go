package consul_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// TestWatchReplicasDrain runs a real agent: a replica whose check warns, or
// that is put in maintenance mode, stays in the set marked draining; a
// critical one leaves it; passing again brings it back undrained.
func TestWatchReplicasDrain(t *testing.T) {
	agent := consultest.Start(t)
	registerReplica(t, agent.Client, "a", []string{consul.ReplicaTag}, nil)
	registerReplica(t, agent.Client, "b", []string{consul.ReplicaTag}, nil)
	w, err := consul.WatchReplicas(context.Background(), agent.Client, "vllm", consul.WatchOptions{WaitTime: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	healthOf := func(id string) string {
		set, _ := w.Current()
		for _, r := range set {
			if r.ID == "alloc-"+id+"/vllm" {
				return r.Health
			}
		}
		return "absent"
	}
	wait := func(id, want string) {
		t.Helper()
		poll.Until(t, id+" "+want, func() bool { return healthOf(id) == want })
	}
	a := agent.Client.Agent()
	wait("a", consul.HealthPassing)

	steps := []struct {
		name string
		do   func() error
		want string
	}{
		{"warning drains", func() error { return a.UpdateTTL("ttl-a", "slow", api.HealthWarning) }, consul.HealthWarning},
		{"critical leaves", func() error { return a.UpdateTTL("ttl-a", "down", api.HealthCritical) }, "absent"},
		{"passing returns", func() error { return a.UpdateTTL("ttl-a", "", api.HealthPassing) }, consul.HealthPassing},
		{"service maintenance drains", func() error { return a.EnableServiceMaintenance("a", "upgrade") }, consul.HealthMaintenance},
		{"maintenance off", func() error { return a.DisableServiceMaintenance("a") }, consul.HealthPassing},
		{"node maintenance drains", func() error { return a.EnableNodeMaintenance("reboot") }, consul.HealthMaintenance},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		wait("a", st.want)
	}
	if got := healthOf("b"); got != consul.HealthMaintenance {
		t.Errorf("b under node maintenance: %s; want %s", got, consul.HealthMaintenance)
	}
}

// TestWatchRoutersPassingOnly: drivers send KV state only to routers whose
// checks all pass.
func TestWatchRoutersPassingOnly(t *testing.T) {
	agent := consultest.Start(t)
	for _, id := range []string{"r1", "r2"} {
		err := agent.Client.Agent().ServiceRegister(&api.AgentServiceRegistration{
			ID: id, Name: consul.RouterService, Address: "127.0.0.1", Port: 8080,
			Meta:  map[string]string{consul.MetaIngestPort: "9000"},
			Check: &api.AgentServiceCheck{CheckID: "ttl-" + id, TTL: "1h", Status: api.HealthPassing},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	w, err := consul.WatchRouters(context.Background(), agent.Client, consul.WatchOptions{WaitTime: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	count := func() int { set, _ := w.Current(); return len(set) }
	poll.Until(t, "two routers", func() bool { return count() == 2 })
	if err := agent.Client.Agent().UpdateTTL("ttl-r2", "", api.HealthWarning); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the warning router to leave", func() bool { return count() == 1 })
}
