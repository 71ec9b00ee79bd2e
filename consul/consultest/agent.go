// Package consultest runs a real Consul agent (bin/consul, built by the
// Makefile from the pinned v1.14.11 module) for tests: `-dev` mode, loopback
// only, every port chosen free, stopped and reaped in t.Cleanup.
//
// It owns nothing but the agent process. It must not import router/...,
// driver/... or cmd/...; any package's tests may import it.
package consultest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/internal/localproc/netport"
)

// BinEnv names the environment variable holding the agent binary's path; the
// Makefile exports it for every test.
const BinEnv = "LLMGW_CONSUL_BIN"

// startTimeout bounds how long an agent may take to elect itself leader.
const startTimeout = 60 * time.Second

// Ports are the agent's listening ports, all on 127.0.0.1.
type Ports struct {
	HTTP, DNS, SerfLAN, SerfWAN, Server, GRPC int
}

// Agent is one running `consul agent -dev` process.
type Agent struct {
	// Client talks to the agent's HTTP API.
	Client *api.Client
	// Addr is the HTTP API address, host:port.
	Addr string
	// DNSAddr is the DNS interface address, host:port (UDP and TCP).
	DNSAddr string
	// Ports are the ports the agent listens on; Restart reuses them.
	Ports Ports

	bin  string
	node string

	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{} // closed when cmd has been reaped
}

// Bin finds the agent binary: $LLMGW_CONSUL_BIN, else bin/consul under the
// module root (found by walking up from the working directory to go.mod).
func Bin() (string, error) {
	if p := os.Getenv(BinEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", BinEnv, p, err)
		}
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "bin", "consul")
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("no consul binary at %s (run `make bin/consul`): %w", p, err)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory, and " + BinEnv + " is unset")
		}
		dir = parent
	}
}

// Start runs a fresh agent and returns once it has elected itself leader. The
// agent is stopped and reaped when the test ends. Without a binary the test
// is skipped, or fails when CI=true, because CI must run every Consul test.
// With -short the test is skipped too: `make quick` neither builds Consul
// nor starts agents, so its time and result do not hang on whether
// bin/consul happens to exist; `make test` runs every Consul test.
func Start(t testing.TB) *Agent {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Consul agent; skipped with -short")
	}
	bin, err := Bin()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("consul agent binary unavailable: %v", err)
		}
		t.Skipf("skipping: consul agent binary unavailable (%v); `make bin/consul` builds it", err)
	}
	ports, err := freePorts()
	if err != nil {
		t.Fatalf("choose ports for consul: %v", err)
	}
	a := &Agent{
		bin:     bin,
		node:    fmt.Sprintf("llmgw-test-%d", ports.HTTP),
		Ports:   ports,
		Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.HTTP)),
		DNSAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.DNS)),
	}
	cfg := api.DefaultConfig()
	cfg.Address = a.Addr
	cfg.Scheme = "http"
	a.Client, err = api.NewClient(cfg)
	if err != nil {
		t.Fatalf("consul client: %v", err)
	}
	t.Cleanup(func() {
		a.Stop()
		cfg.Transport.CloseIdleConnections()
	})
	if err := a.start(); err != nil {
		t.Fatal(err)
	}
	return a
}

// Restart starts a new agent on the same ports after Stop, as an operator
// restarting Consul would: clients keep their address. A -dev agent keeps no
// state, so the new agent starts with an empty catalog.
func (a *Agent) Restart(t testing.TB) {
	t.Helper()
	a.Stop()
	if err := a.start(); err != nil {
		t.Fatal(err)
	}
}

func (a *Agent) start() error {
	p := a.Ports
	hcl := fmt.Sprintf(`ports { http = %d, dns = %d, serf_lan = %d, serf_wan = %d, server = %d, grpc = %d, grpc_tls = -1, https = -1 }
disable_update_check = true`, p.HTTP, p.DNS, p.SerfLAN, p.SerfWAN, p.Server, p.GRPC)
	cmd := exec.Command(a.bin, "agent", "-dev",
		"-bind", "127.0.0.1", "-client", "127.0.0.1",
		"-node", a.node, "-log-level", "warn", "-hcl", hcl)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start consul agent %s: %w", a.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	a.mu.Lock()
	a.cmd, a.out, a.done = cmd, out, done
	a.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	for {
		leader, err := a.Client.Status().Leader()
		if err == nil && leader != "" {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("consul agent exited before electing a leader:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			a.Stop()
			return fmt.Errorf("consul agent elected no leader within %s (last error: %v):\n%s", startTimeout, err, out.String())
		}
	}
}

// Stop ends the agent (SIGTERM, then SIGKILL after 10 s) and reaps it. It is
// idempotent, so tests may call it to simulate an outage.
func (a *Agent) Stop() {
	a.mu.Lock()
	cmd, done := a.cmd, a.done
	a.cmd = nil
	a.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Output returns what the current agent has logged so far, for failure messages.
func (a *Agent) Output() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.out == nil {
		return ""
	}
	return a.out.String()
}

// freePorts chooses the agent's six distinct loopback ports.
func freePorts() (Ports, error) {
	n, err := netport.FreeTCPs(6)
	if err != nil {
		return Ports{}, err
	}
	return Ports{HTTP: n[0], DNS: n[1], SerfLAN: n[2], SerfWAN: n[3], Server: n[4], GRPC: n[5]}, nil
}

// lockedBuffer collects the agent's output from its writer goroutine while
// tests read it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
