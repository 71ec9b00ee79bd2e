package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/server"
)

// TestRoutersShareTheirLoad: two routers registered in Consul tell each
// other what they have in flight, so a request held open through router A
// steers router B's next requests to the other replica, before any engine
// scrape could show it (B never scrapes after its first round), and stops
// counting once it ends. A registers itself; B is registered for it, as
// Nomad registers the routers of jobs/llmgw-router.nomad.hcl, and finds
// itself among the instances by its address and ingest port.
func TestRoutersShareTheirLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	agent := consultest.Start(t)
	for _, id := range []string{"p-0/main", "p-1/main"} {
		registerReplica(t, agent.Client, id, startSim(t, "--sim-inter-token-latency=50ms"), false)
	}
	start := func(scrape time.Duration, register bool) *server.Server {
		c := routerConfig(token)
		c.Consul.Address, c.Consul.Services, c.Consul.Register = agent.Addr, []string{"vllm"}, register
		c.Consul.CheckInterval = time.Second
		c.PeerInterval = 20 * time.Millisecond
		c.ScrapeInterval = scrape
		r := startRouter(t, c)
		poll.Until(t, "two replicas from consul", func() bool { return len(r.Replicas().ForModel(model)) == 2 })
		if !register {
			host, port, _ := net.SplitHostPort(r.Addr())
			_, ingest, _ := net.SplitHostPort(r.IngestAddr())
			p, _ := strconv.Atoi(port)
			err := agent.Client.Agent().ServiceRegister(&api.AgentServiceRegistration{
				ID: "nomad-router-b", Name: consul.RouterService, Address: host, Port: p,
				Meta:  map[string]string{consul.MetaIngestPort: ingest},
				Check: &api.AgentServiceCheck{HTTP: "http://" + r.Addr() + "/health", Interval: "1s"},
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	a, b := start(200*time.Millisecond, true), start(time.Hour, false)
	for _, r := range []*server.Server{a, b} {
		waitMetrics(t, r, "llmgw_peer_routers 1")
	}

	// A stream through A, held open after its first token (20 s of
	// tokens; ignore_eos keeps the simulator from ending it early).
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

	// B weighs A's request: its next requests go to the idle replica. By
	// chance alone, six would all land there one time in 64.
	// Each waits until B has ended the one before: the client has the
	// whole answer a moment before the router's bookkeeping does, and B's
	// own request left on the idle replica would tie it with A's.
	for i := range 6 {
		got := call(t, b.Addr(), "/v1/completions", completion(longPrompt(100+i), false))
		if got.code != 200 || got.replica == busy {
			t.Fatalf("request %d through B went to %q (%d); want the replica A is not using", i, got.replica, got.code)
		}
		waitMetrics(t, b, fmt.Sprintf(`llmgw_replica_in_flight{replica=%q} 0`, got.replica))
	}

	cancel() // the client goes away: A's request ends, and B hears of it
	waitMetrics(t, b, fmt.Sprintf(`llmgw_replica_peer_in_flight{replica=%q} 0`, busy))
	// Neither router posted to itself: each told itself apart from its
	// peer in Consul, by service id (A) or by address and port (B).
	for _, r := range []*server.Server{a, b} {
		waitMetrics(t, r, `llmgw_peer_load_messages_total{result="own"} 0`)
	}
}

// waitMetrics polls a router's /metrics until every line in want appears.
func waitMetrics(t *testing.T, router *server.Server, want ...string) {
	t.Helper()
	var last string
	ok := poll.Within(poll.Timeout, func() bool {
		resp, err := http.Get("http://" + router.AdminAddr() + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		last = string(b)
		for _, w := range want {
			if !strings.Contains(last, w) {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("router %s /metrics never showed %q; last:\n%s", router.Addr(), want, grepLines(last, "peer"))
	}
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
