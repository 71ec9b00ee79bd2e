package nomad_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/nomad"
	"github.com/llmgw/llmgw/nomad/nomadtest"
)

func standIn(t *testing.T, token string) (*nomadtest.Server, *api.Client) {
	t.Helper()
	s := nomadtest.New(token)
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c, err := nomad.NewClient(nomad.Config{Address: s.Addr(), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func replicaReg(alloc string, port int) api.ServiceRegistration {
	return api.ServiceRegistration{
		ID: "_nomad-task-" + alloc + "-main-vllm-http", ServiceName: "vllm", NodeID: "node-1", AllocID: alloc, JobID: "m",
		Address: "127.0.0.1", Port: port,
		Tags: []string{"llmgw", "llmgw-model=m", "llmgw-replica=" + alloc + "/main", "llmgw-kv-events=true", "llmgw-block-size=32"},
	}
}

func TestMetaFromTags(t *testing.T) {
	got := nomad.MetaFromTags([]string{"llmgw", "llmgw-model=a=b", "llmgw-model=second", "other=x", "llmgw-empty="})
	if len(got) != 2 || got["llmgw-model"] != "a=b" || got["llmgw-empty"] != "" {
		t.Errorf("meta %v", got)
	}
}

func TestHealth(t *testing.T) {
	c := func(svc, mode, status string) api.AllocCheckStatus {
		return api.AllocCheckStatus{Service: svc, Mode: mode, Status: status}
	}
	for _, tc := range []struct {
		name   string
		checks api.AllocCheckStatuses
		want   string
	}{
		{"no checks", nil, consul.HealthPassing},
		{"passing", api.AllocCheckStatuses{"1": c("vllm", "healthiness", "success"), "2": c("vllm", "readiness", "success")}, consul.HealthPassing},
		{"readiness fails: drain", api.AllocCheckStatuses{"1": c("vllm", "healthiness", "success"), "2": c("vllm", "readiness", "failure")}, consul.HealthWarning},
		{"readiness pending: drain", api.AllocCheckStatuses{"2": c("vllm", "readiness", "pending")}, consul.HealthWarning},
		{"healthiness fails", api.AllocCheckStatuses{"1": c("vllm", "healthiness", "failure"), "2": c("vllm", "readiness", "failure")}, consul.HealthCritical},
		{"healthiness pending", api.AllocCheckStatuses{"1": c("vllm", "healthiness", "pending")}, consul.HealthCritical},
		{"other service's check", api.AllocCheckStatuses{"1": c("metrics", "healthiness", "failure")}, consul.HealthPassing},
		{"unknown mode counts as healthiness", api.AllocCheckStatuses{"1": c("vllm", "", "failure")}, consul.HealthCritical},
	} {
		if got := nomad.Health("vllm", tc.checks); got != tc.want {
			t.Errorf("%s: %s; want %s", tc.name, got, tc.want)
		}
	}
}

// TestWatchReplicas follows a service through registration, health
// changes and deregistration on the stand-in, with an ACL token.
func TestWatchReplicas(t *testing.T) {
	s, client := standIn(t, "tok")
	s.Register(replicaReg("a1", 9001))
	untagged := replicaReg("a9", 9009)
	untagged.Tags = []string{"llmgw-model=m", "llmgw-replica=a9/main"}
	s.Register(untagged)
	w, err := nomad.WatchReplicas(context.Background(), client, "vllm", nomad.WatchOptions{WaitTime: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	current := func() []consul.Replica { rs, _ := w.Current(); return rs }
	poll.Until(t, "the first replica", func() bool { return len(current()) == 1 })
	r := current()[0]
	if r.ID != "a1/main" || r.Model != "m" || r.Port != 9001 || r.BlockSize != 32 || !r.KVEvents || r.Health != consul.HealthPassing || r.Node != "node-1" {
		t.Errorf("replica %+v", r)
	}

	s.Register(replicaReg("a2", 9002))
	poll.Until(t, "the second replica", func() bool { return len(current()) == 2 })

	s.SetCheck("a1", nomadtest.Check{Check: "ready", Service: "vllm", Mode: "readiness", Status: "failure"})
	poll.Until(t, "a1 to drain", func() bool { rs := current(); return len(rs) == 2 && rs[0].Draining() })
	s.SetCheck("a1", nomadtest.Check{Check: "alive", Service: "vllm", Status: "failure"})
	poll.Until(t, "a1 to leave when critical", func() bool { rs := current(); return len(rs) == 1 && rs[0].ID == "a2/main" })

	if !s.Deregister(replicaReg("a2", 0).ID) {
		t.Fatal("no a2 to deregister")
	}
	poll.Until(t, "a2 to leave when deregistered", func() bool { return len(current()) == 0 })
	if st := w.Status(); !st.Synced || st.Index == 0 || st.Errors != 0 {
		t.Errorf("status %+v", st)
	}
}

func TestWatchRoutersAndErrors(t *testing.T) {
	s, client := standIn(t, "")
	s.Register(api.ServiceRegistration{ID: "r1", ServiceName: consul.RouterService, NodeID: "n", AllocID: "ra", Address: "10.0.0.1", Port: 8080,
		Tags: []string{"llmgw-kv-ingest-port=8081", "llmgw-admin-port=8082"}})
	s.Register(api.ServiceRegistration{ID: "r2", ServiceName: consul.RouterService, NodeID: "n", AllocID: "rb", Address: "10.0.0.2", Port: 8080})
	s.SetCheck("rb", nomadtest.Check{Check: "health", Service: consul.RouterService, Status: "pending"})
	w, err := nomad.WatchRegisteredRouters(context.Background(), client, nomad.WatchOptions{WaitTime: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	poll.Until(t, "the router", func() bool { _, ok := w.Current(); return ok })
	rs, _ := w.Current()
	if len(rs) != 1 || rs[0].ID != "n/r1" || rs[0].IngestPort != 8081 || rs[0].AdminPort != 8082 {
		t.Errorf("routers %+v; want r1 only (r2 has no ingest port)", rs)
	}

	// The agent goes away: the last set stays, errors count.
	s.Close()
	poll.Until(t, "an error", func() bool { return w.Status().ConsecutiveErrors > 0 })
	if rs, ok := w.Current(); !ok || len(rs) != 1 {
		t.Errorf("after the outage: %+v", rs)
	}
	if _, err := nomad.WatchRouters(context.Background(), nil, nomad.WatchOptions{}); err == nil {
		t.Error("nil client accepted")
	}
}
