package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/internal/localproc/netport"
)

// consulStartTimeout bounds how long the agent may take to elect itself.
const consulStartTimeout = 60 * time.Second

// consulAgent is the fleet's Consul: one agent that is its own server, on
// loopback only, with its state in the work dir. Not `consul agent -dev`,
// whose catalog lives in memory: a dev agent killed and started again
// comes back knowing no service until the registrants sync, which is no
// production agent's restart (servers keep the catalog on disk; a client
// agent keeps its local services in its data dir). serverConfig has the
// settings that -dev would bring and the fleet relies on.
type consulAgent struct {
	p        *proc
	argv     []string // the agent's command line, for Restart
	logPath  string   // consul.log, then consul-<n>.log after the n-th restart
	restarts int
	httpAddr string
	dnsAddr  string
	client   *api.Client
}

// startConsul runs the agent with its log in dir and returns once it has
// elected itself leader. On error nothing is left running. Its six ports
// are chosen with netport, free when chosen and released for the agent
// to bind, so another process (a test beside this one, a shard's engine)
// can take one in between; an agent that exits because a port was taken
// is started again on new ones, up to portRetries times in all.
func startConsul(ctx context.Context, bin, dir string) (*consulAgent, error) {
	for attempt := 1; ; attempt++ {
		a, err := startConsulOnce(ctx, bin, dir)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == portRetries {
			return a, err
		}
	}
}

// startConsulOnce is one try of startConsul, on ports it chooses.
func startConsulOnce(ctx context.Context, bin, dir string) (*consulAgent, error) {
	ports, err := consulPorts(6)
	if err != nil {
		return nil, fmt.Errorf("consul ports: %w", err)
	}
	hcl := fmt.Sprintf(`ports { http = %d, dns = %d, serf_lan = %d, serf_wan = %d, server = %d, grpc = %d, grpc_tls = -1, https = -1 }
%s`, ports[0], ports[1], ports[2], ports[3], ports[4], ports[5], serverConfig)
	a := &consulAgent{
		httpAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		dnsAddr:  net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
	}
	// Not pooled: the fleet's few calls need no idle connections, and none
	// outlive Close.
	cfg := api.DefaultNonPooledConfig()
	cfg.Address = a.httpAddr
	if a.client, err = api.NewClient(cfg); err != nil {
		return nil, fmt.Errorf("consul client: %w", err)
	}
	a.argv = []string{bin, "agent", "-data-dir", filepath.Join(dir, "consul-data"),
		"-bind", "127.0.0.1", "-client", "127.0.0.1", "-node", "llmgw-fleet", "-log-level", "warn", "-hcl", hcl}
	a.logPath = filepath.Join(dir, "consul.log")
	if err := a.run(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// run starts the agent's process and waits until it has elected itself
// leader; on error the process is stopped.
func (a *consulAgent) run(ctx context.Context) error {
	var err error
	if a.p, err = startProc("consul", a.logPath, a.argv, nil); err != nil {
		return err
	}
	err = poll(ctx, consulStartTimeout, "consul to elect a leader", func() error {
		if a.p.exited() {
			log := a.p.tail()
			if strings.Contains(log, "address already in use") {
				return fmt.Errorf("%w: consul agent exited:\n%s", errPortTaken, log)
			}
			return fmt.Errorf("consul agent exited:\n%s", log)
		}
		// Each question has a deadline of its own: a port taken by a
		// process that accepts and never answers would hang a plain call.
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if leader, err := a.client.Status().LeaderWithQueryOptions((&api.QueryOptions{}).WithContext(qctx)); err != nil || leader == "" {
			return notYet("leader %q, %v", leader, err)
		}
		return nil
	})
	if err != nil {
		a.p.stop(5 * time.Second)
		return err
	}
	return nil
}

// serverConfig makes the agent a single server that elects itself at once
// (bootstrap), with -dev's fast Raft timing and check results synced to
// the catalog as soon as they change.
const serverConfig = `server = true
bootstrap = true
performance { raft_multiplier = 1 }
check_update_interval = "0s"
disable_update_check = true
disable_anonymous_signature = true`

// consulPorts chooses the agent's ports; tests replace it to hand the
// agent a port that is taken.
var consulPorts = netport.FreeTCPs

// stop ends the agent and reaps it.
func (a *consulAgent) stop() { a.p.stop(10 * time.Second) }

// restart starts the agent again after it died, with the same command
// line (ports, data dir), and waits until it leads again: its catalog and
// local services come back from its data dir. Its log goes to
// a new file, so the dead agent's log stays readable.
func (a *consulAgent) restart(ctx context.Context) error {
	if !a.p.exited() {
		return errors.New("restart consul: the agent still runs")
	}
	a.restarts++
	a.logPath = filepath.Join(filepath.Dir(a.logPath), fmt.Sprintf("consul-%d.log", a.restarts))
	return a.run(ctx)
}
