package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/server"
)

// adminReplica reads one replica from the router's /admin/replicas.
type adminReplica struct {
	Draining   bool   `json:"draining"`
	Health     string `json:"health"`
	Mode       string `json:"mode"`
	ModeReason string `json:"mode_reason"`
	GPUBlocks  int    `json:"gpu_blocks"`
	// The block sizes: the one keys use, the advertised one, the
	// engine's and where it came from, and how they disagree.
	BlockSize         int    `json:"block_size"`
	MetaBlockSize     int    `json:"meta_block_size"`
	EngineBlockSize   int    `json:"engine_block_size"`
	BlockSizeSource   string `json:"block_size_source"`
	BlockSizeMismatch string `json:"block_size_mismatch"`
}

func adminReplicas(t *testing.T, r *server.Server) map[string]adminReplica {
	t.Helper()
	resp, err := http.Get("http://" + r.AdminAddr() + "/admin/replicas")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Replicas []struct {
			ID string `json:"id"`
			adminReplica
		} `json:"replicas"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	out := map[string]adminReplica{}
	for _, rep := range list.Replicas {
		out[rep.ID] = rep.adminReplica
	}
	return out
}

// TestDrainOnWarning runs three vllm-sim replicas with KV events, a real
// Consul agent and a router. The replica holding a prompt streams a long
// answer; its check turns warning mid-stream: the stream still completes,
// the replica takes no new request, the router keeps its index state and
// shows it draining; passing again, it gets the prompt back with a warm
// cache. Maintenance mode drains it the same way; critical removes it.
func TestDrainOnWarning(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	slow := []string{"--sim-latency=true", "--sim-inter-token-latency", "10ms"}
	f := startFleetWith(t, slow, slow, slow)
	r := f.router(t, "router-drain")
	poll.Until(t, "three replicas", func() bool { return len(r.Replicas().ForModel(model)) == 3 })

	text := longPrompt(31)
	home := call(t, r.Addr(), "/v1/completions", completion(text, false)).replica
	waitExact(t, r, home)
	waitCached(t, r, text, home)
	agent := f.agent.Client.Agent()
	check := "ttl-" + serviceID(home)
	err := agent.CheckRegister(&api.AgentCheckRegistration{ID: check, Name: "engine load", ServiceID: serviceID(home),
		AgentServiceCheck: api.AgentServiceCheck{TTL: "1h", Status: api.HealthPassing}})
	if err != nil {
		t.Fatal(err)
	}

	// A long stream to home is in flight when its check starts warning.
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
	if err := agent.UpdateTTL(check, "queue too long", api.HealthWarning); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "home to drain", func() bool { rep, _ := r.Replicas().Get(home); return rep.Draining })
	rest, err := io.ReadAll(br)
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") || strings.Contains(string(rest), `"error"`) {
		t.Fatalf("in-flight stream after the drain began: %v, tail %q", err, string(rest)[max(0, len(rest)-200):])
	}

	if a := adminReplicas(t, r)[home]; !a.Draining || a.Health != "warning" || a.Mode != "exact" || a.GPUBlocks == 0 {
		t.Errorf("admin view of draining home: %+v; want draining, warning, exact, blocks kept", a)
	}
	if m := metricsText(t, r); !strings.Contains(m, fmt.Sprintf(`llmgw_replica_draining{health="warning",replica=%q} 1`, home)) {
		t.Errorf("metrics lack the draining gauge for %s", home)
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

	if err := agent.UpdateTTL(check, "", api.HealthPassing); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "home to resume", func() bool { rep, _ := r.Replicas().Get(home); return !rep.Draining })
	if a := call(t, r.Addr(), "/v1/completions", completion(text, false)); a.replica != home || a.mode != "exact" || cachedTokens(t, a.body) == 0 {
		t.Errorf("after resuming: on %q (%s), engine cached %d; want %s, exact, warm", a.replica, a.mode, cachedTokens(t, a.body), home)
	}

	if err := agent.EnableServiceMaintenance(serviceID(home), "upgrade"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "home to drain for maintenance", func() bool { return adminReplicas(t, r)[home].Health == "maintenance" })
	if a := call(t, r.Addr(), "/v1/completions", completion(text, false)); a.replica == home {
		t.Errorf("replica in maintenance got a new request")
	}
	if err := agent.DisableServiceMaintenance(serviceID(home)); err != nil {
		t.Fatal(err)
	}
	if err := agent.UpdateTTL(check, "engine died", api.HealthCritical); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "home to leave when critical", func() bool { _, ok := r.Replicas().Get(home); return !ok })
	if _, listed := adminReplicas(t, r)[home]; listed {
		t.Errorf("critical replica still listed")
	}
}

func metricsText(t *testing.T, r *server.Server) string {
	t.Helper()
	resp, err := http.Get("http://" + r.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
