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

func registerIn(t *testing.T, c *api.Client, service, id string, tags []string) {
	t.Helper()
	err := c.Agent().ServiceRegister(&api.AgentServiceRegistration{
		ID: id, Name: service, Address: "127.0.0.1", Port: 8000, Tags: tags,
		Meta:  map[string]string{consul.MetaReplica: "alloc-" + id + "/vllm", consul.MetaModel: service},
		Check: &api.AgentServiceCheck{CheckID: "ttl-" + id, TTL: "1h", Status: api.HealthPassing},
	})
	if err != nil {
		t.Fatalf("register %s: %v", id, err)
	}
}

// TestWatchAllReplicas finds replicas in any service tagged llmgw, follows
// services appearing and disappearing, and ignores untagged ones.
func TestWatchAllReplicas(t *testing.T) {
	agent := consultest.Start(t)
	registerIn(t, agent.Client, "qwen", "q1", []string{consul.ReplicaTag})
	registerIn(t, agent.Client, "web", "w1", []string{"http"})
	w, err := consul.WatchAllReplicas(context.Background(), agent.Client, consul.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ids := func() []string {
		set, _ := w.Current()
		var out []string
		for _, r := range set {
			out = append(out, r.ID+"@"+r.Model)
		}
		return out
	}
	poll.Until(t, "qwen replica", func() bool { return equal(ids(), "alloc-q1/vllm@qwen") })
	if _, ok := w.Current(); !ok {
		t.Error("set seen but not synced")
	}

	registerIn(t, agent.Client, "llama", "l1", []string{consul.ReplicaTag, "gpu"})
	registerIn(t, agent.Client, "qwen", "q2", []string{consul.ReplicaTag})
	registerIn(t, agent.Client, "qwen", "q3", nil) // same service, untagged instance
	poll.Until(t, "a new service and a second instance", func() bool {
		return equal(ids(), "alloc-l1/vllm@llama", "alloc-q1/vllm@qwen", "alloc-q2/vllm@qwen")
	})
	if got := w.Services(); !equal(got, "llama", "qwen") {
		t.Errorf("watched services %v; want [llama qwen]", got)
	}

	if err := agent.Client.Agent().UpdateTTL("ttl-q1", "", api.HealthCritical); err != nil {
		t.Fatal(err)
	}
	if err := agent.Client.Agent().ServiceDeregister("l1"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "critical and deregistered replicas to leave", func() bool { return equal(ids(), "alloc-q2/vllm@qwen") })
	poll.Until(t, "the empty service to be dropped", func() bool { return equal(w.Services(), "qwen") })
	if st := w.Status(); !st.Synced || st.ConsecutiveErrors != 0 {
		t.Errorf("status %+v; want synced without errors", st)
	}
}

// TestWatchAllReplicasSurvivesOutage: the merged set is kept while Consul is
// down, and a new agent's services are picked up.
func TestWatchAllReplicasSurvivesOutage(t *testing.T) {
	agent := consultest.Start(t)
	registerIn(t, agent.Client, "qwen", "q1", []string{consul.ReplicaTag})
	w, err := consul.WatchAllReplicas(context.Background(), agent.Client, consul.WatchOptions{
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	count := func() int { set, _ := w.Current(); return len(set) }
	poll.Until(t, "q1", func() bool { return count() == 1 })
	agent.Stop()
	poll.Until(t, "repeated errors", func() bool { return w.Status().ConsecutiveErrors >= 3 })
	if n := count(); n != 1 {
		t.Errorf("during the outage the set has %d replicas; want the last known 1", n)
	}
	agent.Restart(t)
	registerIn(t, agent.Client, "llama", "l1", []string{consul.ReplicaTag})
	poll.Until(t, "the new agent's replica", func() bool {
		set, _ := w.Current()
		return len(set) == 1 && set[0].ID == "alloc-l1/vllm"
	})
}

func TestWatchTaggedRejectsBadArguments(t *testing.T) {
	agent := consultest.Start(t)
	ctx := context.Background()
	if _, err := consul.WatchTagged(ctx, nil, "llmgw", consul.ConvertReplicas, consul.WatchOptions{}); err == nil {
		t.Error("nil client: got nil error")
	}
	if _, err := consul.WatchTagged(ctx, agent.Client, "", consul.ConvertReplicas, consul.WatchOptions{}); err == nil {
		t.Error("empty tag: got nil error")
	}
	if _, err := consul.WatchTagged[consul.Replica](ctx, agent.Client, "llmgw", nil, consul.WatchOptions{}); err == nil {
		t.Error("nil converter: got nil error")
	}
}
