package replicas

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

func register(t *testing.T, c *api.Client, id, model string) {
	t.Helper()
	err := c.Agent().ServiceRegister(&api.AgentServiceRegistration{
		ID: id, Name: "vllm", Tags: []string{consul.ReplicaTag}, Address: "127.0.0.1", Port: 9000,
		Meta: map[string]string{consul.MetaModel: model, consul.MetaReplica: id + "/task"},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// follow runs Follow over static and the agent's "vllm" replicas into a new
// fixture until the test ends.
func follow(t *testing.T, agent *consultest.Agent, static []Replica) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := consul.WatchReplicas(ctx, agent.Client, "vllm", consul.WatchOptions{WaitTime: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Follow(ctx, f.set, static, []NamedSource{{Service: "vllm", Source: w}})
	}()
	t.Cleanup(func() { cancel(); <-done; w.Close() })
	return f
}

// TestFollowConsul runs a real Consul agent: replicas registered appear in
// the set, a deregistered one leaves it, and static replicas stay.
func TestFollowConsul(t *testing.T) {
	agent := consultest.Start(t)
	f := follow(t, agent, []Replica{{ID: "static/1", Model: "m", Address: "h:1", Source: "static"}})

	register(t, agent.Client, "r1", "m")
	register(t, agent.Client, "r2", "m")
	ids := func() string { return fmt.Sprint(len(f.set.ForModel("m"))) }
	poll.Until(t, "three replicas", func() bool { return ids() == "3" })
	f.snapshot("d", 1, "r1/task")
	if f.set.Mode("r1/task") != "exact" {
		t.Fatalf("r1 not exact after a snapshot")
	}
	if err := agent.Client.Agent().ServiceDeregister("r1"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "r1 to leave", func() bool { _, ok := f.set.Get("r1/task"); return !ok })
	// The set drops a replica's index entries just after it stops listing
	// it (outside its lock), so a check made between the two would see
	// them: wait for the entries to go too.
	poll.Until(t, "r1's index entries to go", func() bool { return len(f.models.Lookup("m", []uint64{42}, nil)) == 0 })
	if _, ok := f.set.Get("static/1"); !ok {
		t.Errorf("static replica lost")
	}
}

// TestFollowConsulDrain: a replica whose Consul check warns drains (marked,
// KV state kept); critical, it leaves the set and the index at once.
func TestFollowConsulDrain(t *testing.T) {
	agent := consultest.Start(t)
	f := follow(t, agent, nil)
	err := agent.Client.Agent().ServiceRegister(&api.AgentServiceRegistration{
		ID: "r1", Name: "vllm", Tags: []string{consul.ReplicaTag}, Address: "127.0.0.1", Port: 9000,
		Meta:  map[string]string{consul.MetaModel: "m", consul.MetaReplica: "r1/task"},
		Check: &api.AgentServiceCheck{CheckID: "ttl-r1", TTL: "1h", Status: api.HealthPassing},
	})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "r1 to join", func() bool { _, ok := f.set.Get("r1/task"); return ok })
	f.snapshot("d", 1, "r1/task")
	if err := agent.Client.Agent().UpdateTTL("ttl-r1", "overloaded", api.HealthWarning); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "r1 to drain", func() bool { r, _ := f.set.Get("r1/task"); return r.Draining })
	if r, _ := f.set.Get("r1/task"); r.Health != consul.HealthWarning {
		t.Errorf("health %q; want %q", r.Health, consul.HealthWarning)
	}
	if m := f.models.Lookup("m", []uint64{42}, nil); len(m) != 1 {
		t.Errorf("draining replica's index state lost: %v", m)
	}
	if err := agent.Client.Agent().UpdateTTL("ttl-r1", "dead", api.HealthCritical); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "r1 to leave", func() bool { _, ok := f.set.Get("r1/task"); return !ok })
	if m := f.models.Lookup("m", []uint64{42}, nil); len(m) != 0 {
		t.Errorf("index still holds %v after the check went critical", m)
	}
}
