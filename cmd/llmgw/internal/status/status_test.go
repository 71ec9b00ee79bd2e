package status

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/server"
)

// startRouter runs a real router with one static replica (nothing listens
// at its address, so it is routed without prefix information), registered
// in Consul when consulAddr is set.
func startRouter(t *testing.T, consulAddr string) *server.Server {
	t.Helper()
	c := config.Default()
	c.Listen, c.IngestListen = "127.0.0.1:0", "127.0.0.1:0"
	c.Models = map[string]config.Model{"sim-model": {Sim: true}}
	c.Replicas = []config.StaticReplica{{ID: "alloc-1/sim", Model: "sim-model", Address: "127.0.0.1:9", BlockSize: 16}}
	if consulAddr != "" {
		c.Consul.Address = consulAddr
		c.Consul.Register = true
		c.Consul.CheckInterval = time.Second
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

func TestStatusFromConsul(t *testing.T) {
	agent := consultest.Start(t)
	r := startRouter(t, agent.Addr)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // Run leaves nothing behind
	var out bytes.Buffer
	// The router is found once its health check passes; Run waits for that
	// within its timeout.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out.Reset()
		err := Run(context.Background(), Options{Consul: agent.Addr, Timeout: 2 * time.Second}, &out)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never found the router: %v", err)
		}
	}
	for _, want := range []string{"router " + r.Addr() + ": 1 replicas", "alloc-1/sim", "sim-model", "MODE"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestStatusDirect(t *testing.T) {
	r := startRouter(t, "")
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out bytes.Buffer
	if err := Run(context.Background(), Options{Routers: []string{r.Addr()}}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines; want a router line, a header and one replica:\n%s", len(lines), out.String())
	}
	fields := strings.Fields(lines[2])
	if fields[0] != "alloc-1/sim" || fields[1] != "sim-model" {
		t.Errorf("replica row %q; want alloc-1/sim sim-model ...", lines[2])
	}
}

func TestStatusErrors(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last: after the server below is closed
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	notRouter := &http.Server{Handler: http.NotFoundHandler()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go notRouter.Serve(ln)
	t.Cleanup(func() { notRouter.Close() })

	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"router down", Options{Routers: []string{deadAddr}}, "router " + deadAddr},
		{"not a router", Options{Routers: []string{ln.Addr().String()}}, "404 Not Found"},
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
