package status

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/server"
)

// adminToken guards the test routers' admin listeners.
const adminToken = "admin-secret"

// fakeEngine serves the parts of vLLM's API the router scrapes: /metrics
// and a model listing with one LoRA adapter, "sql".
func fakeEngine(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			io.WriteString(w, `{"object":"list","data":[{"id":"sim-model","parent":null},{"id":"sql","parent":"sim-model"}]}`)
			return
		}
		io.WriteString(w, "vllm:num_requests_waiting 0\n")
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// startRouter runs a real router with one static replica, a fake engine
// serving one adapter (it has no KV events, so it is routed without
// prefix information), registered in Consul when consulAddr is set and
// then also watching the Consul service "vllm" for replicas.
func startRouter(t *testing.T, consulAddr string) *server.Server {
	t.Helper()
	c := config.Default()
	c.Listen, c.IngestListen, c.HTTP.AdminListen = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	c.HTTP.AdminToken = adminToken
	c.Models = map[string]config.Model{"sim-model": {Sim: true}}
	c.Replicas = []config.StaticReplica{{ID: "alloc-1/sim", Model: "sim-model", Address: fakeEngine(t), BlockSize: 16}}
	c.ScrapeInterval = 50 * time.Millisecond
	if consulAddr != "" {
		c.Consul.Address = consulAddr
		c.Consul.Register = true
		c.Consul.CheckInterval = time.Second
		c.Consul.Services = []string{"vllm"}
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := server.Start(context.Background(), c, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Columns of a replica row, as strings.Fields splits it.
const (
	colReplica  = 0
	colModel    = 1
	colRole     = 2
	colConsul   = 5
	colDraining = 6
	colInFlight = 10
	colByPeers  = 11
	colAdapters = 15
	columns     = 16
)

// rows splits Run's output into each replica's fields, by replica id.
func rows(out string) map[string][]string {
	m := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(f[0], "/") {
			m[f[colReplica]] = f
		}
	}
	return m
}

// TestStatusFromConsul: the router is found in Consul, and its replicas
// show with their Consul health, draining state and adapters: a Consul
// replica whose check warns drains; the static one has no Consul health
// and serves the adapter "sql".
func TestStatusFromConsul(t *testing.T) {
	// Runs last, once the router, the fake engine and Consul are gone:
	// neither Run nor they leave goroutines behind.
	t.Cleanup(func() { goleak.VerifyNone(t) })
	agent := consultest.Start(t)
	err := agent.Client.Agent().ServiceRegister(&api.AgentServiceRegistration{
		ID: "vllm-alloc-2", Name: "vllm", Tags: []string{consul.ReplicaTag}, Address: "127.0.0.1", Port: 9,
		Meta:  map[string]string{consul.MetaModel: "sim-model", consul.MetaReplica: "alloc-2/sim", consul.MetaRole: "decode"},
		Check: &api.AgentServiceCheck{TTL: "1h", Status: api.HealthWarning},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := startRouter(t, agent.Addr)
	want := map[string][]string{
		"alloc-1/sim": {colRole: "agg", colConsul: "-", colDraining: "false", colInFlight: "0", colByPeers: "0", colAdapters: "sql"},
		"alloc-2/sim": {colRole: "decode", colConsul: "warning", colDraining: "true", colInFlight: "0", colByPeers: "0", colAdapters: "-"},
	}
	var out bytes.Buffer
	// The router is found once its health check passes, and the adapter
	// once it is scraped; Run waits for the first within its timeout.
	if !poll.Within(poll.Timeout, func() bool {
		out.Reset()
		err = Run(context.Background(), Options{Consul: agent.Addr, Timeout: 2 * time.Second, AdminToken: adminToken}, &out)
		return err == nil && matches(rows(out.String()), want) == ""
	}) {
		t.Fatalf("status never showed the replicas as wanted (%v; %s):\n%s", err, matches(rows(out.String()), want), out.String())
	}
	for _, w := range []string{"router " + r.AdminAddr() + ": 2 replicas", "ROLE", "MODE", "CONSUL", "DRAINING", "ADAPTERS"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}

// matches says how got differs from want (non-empty cells of want, by
// column), or "" when it does not.
func matches(got, want map[string][]string) string {
	for id, cells := range want {
		row, ok := got[id]
		if !ok {
			return "no row for " + id
		}
		if len(row) != columns {
			return fmt.Sprintf("%s: %d columns; want %d", id, len(row), columns)
		}
		for col, w := range cells {
			if w != "" && row[col] != w {
				return fmt.Sprintf("%s column %d: %q; want %q", id, col, row[col], w)
			}
		}
	}
	return ""
}

func TestStatusDirect(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last, as above
	r := startRouter(t, "")
	var out bytes.Buffer
	var lines []string
	// The router applies its static replica just after Start returns.
	if !poll.Within(poll.Timeout, func() bool {
		out.Reset()
		if err := Run(context.Background(), Options{Routers: []string{r.AdminAddr()}, AdminToken: adminToken}, &out); err != nil {
			t.Fatal(err)
		}
		lines = strings.Split(strings.TrimSpace(out.String()), "\n")
		return len(lines) == 3
	}) {
		t.Fatalf("got %d lines; want a router line, a header and one replica:\n%s", len(lines), out.String())
	}
	want := map[string][]string{"alloc-1/sim": {colModel: "sim-model", colConsul: "-", colDraining: "false"}}
	if d := matches(rows(out.String()), want); d != "" {
		t.Errorf("%s:\n%s", d, out.String())
	}
}

func TestStatusErrors(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last: after the server below is closed
	deadAddr := netport.FreeAddr(t)
	notRouter := &http.Server{Handler: http.NotFoundHandler()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go notRouter.Serve(ln)
	t.Cleanup(func() { notRouter.Close() })
	r := startRouter(t, "")

	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"router down", Options{Routers: []string{deadAddr}}, "router " + deadAddr},
		{"not a router", Options{Routers: []string{ln.Addr().String()}}, "404 Not Found"},
		{"no admin token", Options{Routers: []string{r.AdminAddr()}}, "admin_token is needed"},
		{"wrong admin token", Options{Routers: []string{r.AdminAddr()}, AdminToken: "guess"}, "401 Unauthorized"},
		{"the API port", Options{Routers: []string{r.Addr()}, AdminToken: adminToken}, "404 Not Found"},
		{"consul down", Options{Consul: deadAddr, Timeout: 500 * time.Millisecond}, "find routers in consul at " + deadAddr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Run(context.Background(), tt.opts, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestStatusNoRouters(t *testing.T) {
	agent := consultest.Start(t)
	err := Run(context.Background(), Options{Consul: agent.Addr, Timeout: 5 * time.Second}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "no passing llmgw-router instances") {
		t.Errorf("got %v; want no passing routers", err)
	}
}
