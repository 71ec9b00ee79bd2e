package fleet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/nomad"
	"github.com/llmgw/llmgw/nomad/nomadtest"
)

// nomadNode is the node id the fleet's registrations carry: one machine.
const nomadNode = "llmgw-fleet"

// nomadCatalogue plays Nomad for services with provider = "nomad": the
// stand-in of Nomad's services API (nomad/nomadtest) serves the catalogue
// in this process, and the fleet does what a Nomad client does from the
// service blocks of jobs/demo-sim-nomad.nomad.hcl and
// jobs/llmgw-router-nomad.nomad.hcl: it registers each shard and router
// with its llmgw tags, runs their HTTP checks on /health every
// checkInterval and reports each result (SetCheck), and deregisters a
// service before its task stops. Routers do not register themselves on
// Nomad, so the fleet allocates their ports, as Nomad does.
type nomadCatalogue struct {
	srv  *nomadtest.Server
	http *http.Client

	ctx    context.Context // ends the checkers
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	checkers map[string]*checker // by registration id
}

// startNomad starts the stand-in on a free loopback port.
func startNomad(ctx context.Context, client *http.Client) (*nomadCatalogue, error) {
	srv := nomadtest.New("")
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &nomadCatalogue{srv: srv, http: client, ctx: cctx, cancel: cancel, checkers: map[string]*checker{}}, nil
}

func (n *nomadCatalogue) driverConfig(cfg map[string]any) {
	cfg["discovery"] = DiscoveryNomad
	cfg["nomad_address"] = n.srv.Addr()
}

func (n *nomadCatalogue) routerConf(rc *routerConf) error {
	ports, err := netport.FreeTCPs(3)
	if err != nil {
		return fmt.Errorf("router ports: %w", err)
	}
	rc.NomadAddr = n.srv.Addr()
	copy(rc.Ports[:], ports)
	return nil
}

// nomadServiceID is Nomad's id of a task's service: no "/", as in
// "_nomad-task-<alloc>-<task>-<service>-<port label>"; a group service
// puts "group-<group>" for the task.
func nomadServiceID(alloc, owner, service string) string {
	return "_nomad-task-" + alloc + "-" + owner + "-" + service + "-http"
}

// registerShard registers the shard as the jobspec's service "vllm" does,
// its meta in tags. Its first check has run by then (the driver found it
// ready), so routers see it passing from the start: Nomad's index moves
// with registrations, not with check results.
func (n *nomadCatalogue) registerShard(_ context.Context, s *shard) error {
	c := n.startChecker(s.serviceID, s.allocID, nomadtest.Check{
		Check: `service: "vllm" check`, Service: "vllm", Task: "sim",
		Group: fmt.Sprintf("demo-sim-nomad.sim[%d]", s.index)}, s.url+"/health")
	n.srv.Register(nomadapi.ServiceRegistration{
		ID: c.id, ServiceName: "vllm", Namespace: "default", NodeID: nomadNode, Datacenter: "dc1",
		JobID: "demo-sim-nomad", AllocID: s.allocID, Address: "127.0.0.1", Port: s.port,
		Tags: []string{
			consul.ReplicaTag,
			consul.MetaModel + "=" + s.model,
			consul.MetaReplica + "=" + s.replica,
			consul.MetaBlockSize + "=" + strconv.Itoa(blockSize),
			consul.MetaKVEvents + "=true",
			consul.MetaRole + "=" + s.role, // "": aggregated
		},
	})
	return nil
}

func (n *nomadCatalogue) deregisterShard(_ context.Context, s *shard) error {
	n.stopChecker(s.serviceID)
	if !n.srv.Deregister(s.serviceID) {
		return fmt.Errorf("deregister %s: not registered", s.serviceID)
	}
	return nil
}

// routerUp waits for the router's check to pass, then registers it as
// the jobspec's group service "llmgw-router" does, the ingest and admin
// ports in tags.
func (n *nomadCatalogue) routerUp(ctx context.Context, r *router, rc routerConf) error {
	alloc := randomUUID()
	r.serviceID = nomadServiceID(alloc, "group-router", consul.RouterService)
	r.url = "http://127.0.0.1:" + strconv.Itoa(rc.Ports[0])
	r.adminURL = "http://127.0.0.1:" + strconv.Itoa(rc.Ports[2])
	c := n.startChecker(r.serviceID, alloc, nomadtest.Check{
		Check: `service: "llmgw-router" check`, Service: consul.RouterService, Group: "llmgw-router-nomad.router[0]"}, r.url+"/health")
	err := poll(ctx, routerStartTimeout, r.name+"'s nomad check to pass", func() error {
		if r.p.exited() {
			return fmt.Errorf("%s exited:\n%s", r.name, r.p.tail())
		}
		if st := c.status(); st != nomad.CheckSuccess {
			return notYet("%s's check is %s", r.name, st)
		}
		return nil
	})
	if err != nil {
		n.stopChecker(r.serviceID)
		return err
	}
	// Registered once it answers, as a Consul router registers itself
	// once it listens: drivers send KV state to a router as soon as they
	// see it, and one that does not listen yet only costs them retries.
	n.srv.Register(nomadapi.ServiceRegistration{
		ID: r.serviceID, ServiceName: consul.RouterService, Namespace: "default", NodeID: nomadNode, Datacenter: "dc1",
		JobID: "llmgw-router-nomad", AllocID: alloc, Address: "127.0.0.1", Port: rc.Ports[0],
		Tags: []string{"http", consul.MetaIngestPort + "=" + strconv.Itoa(rc.Ports[1]), consul.MetaAdminPort + "=" + strconv.Itoa(rc.Ports[2])},
	})
	return nil
}

// routerDown deregisters the router before it stops, as Nomad does before
// its shutdown_delay; a killed router's registration goes too.
func (n *nomadCatalogue) routerDown(_ context.Context, r *router) {
	n.stopChecker(r.serviceID)
	n.srv.Deregister(r.serviceID)
}

func (n *nomadCatalogue) stop() {
	n.cancel()
	n.wg.Wait()
	n.srv.Close()
}

// checker runs one service's HTTP check, as the Nomad client runs a
// provider = "nomad" check, and reports each result to the catalogue.
type checker struct {
	id, alloc string
	check     nomadtest.Check // the check's names
	url       string
	cancel    context.CancelFunc
	done      chan struct{}

	mu   sync.Mutex
	last string
}

// startChecker runs the check once, reports it, and goes on every
// checkInterval until stopChecker.
func (n *nomadCatalogue) startChecker(id, alloc string, c nomadtest.Check, url string) *checker {
	ctx, cancel := context.WithCancel(n.ctx)
	ch := &checker{id: id, alloc: alloc, check: c, url: url, cancel: cancel, done: make(chan struct{})}
	ch.run(ctx, n)
	n.mu.Lock()
	n.checkers[id] = ch
	n.mu.Unlock()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer close(ch.done)
		tick := time.NewTicker(checkInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				ch.run(ctx, n)
			}
		}
	}()
	return ch
}

// stopChecker ends id's checker, if any, and waits for it.
func (n *nomadCatalogue) stopChecker(id string) {
	n.mu.Lock()
	ch := n.checkers[id]
	delete(n.checkers, id)
	n.mu.Unlock()
	if ch != nil {
		ch.cancel()
		<-ch.done
	}
}

// run makes one GET of the check's URL: a 2xx answer within
// checkInterval is a success, anything else a failure, as Nomad's http
// check.
func (ch *checker) run(ctx context.Context, n *nomadCatalogue) {
	c := ch.check
	c.Status, c.Output = nomad.CheckFailure, ""
	rctx, cancel := context.WithTimeout(ctx, checkInterval)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, ch.url, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = n.http.Do(req); err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			resp.Body.Close()
			c.StatusCode, c.Output = resp.StatusCode, strings.TrimSpace(string(body))
			if resp.StatusCode/100 == 2 {
				c.Status = nomad.CheckSuccess
			}
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return // stopping: no result to report
		}
		c.Output = err.Error()
	}
	n.srv.SetCheck(ch.alloc, c)
	ch.mu.Lock()
	ch.last = c.Status
	ch.mu.Unlock()
}

// status is the last result, "" before the first.
func (ch *checker) status() string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.last
}

// randomUUID is an allocation id in Nomad's shape.
func randomUUID() string {
	h := randomHex(16)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// nomadRouterConfig renders a router's config on Nomad discovery, as the
// template of jobs/llmgw-router-nomad.nomad.hcl does: the listeners on
// the ports allocated for it, discovery = "nomad" and the nomad block;
// the rest as routerConfig.
func nomadRouterConfig(c routerConf) string {
	var b strings.Builder
	fmt.Fprintf(&b, `listen        = "127.0.0.1:%d"
ingest_listen = "127.0.0.1:%d"
admin_listen  = "127.0.0.1:%d"
log_level     = "info"

expose_route_headers = true

discovery = "nomad"
nomad {
  address  = %q
  services = ["vllm"]
}
`, c.Ports[0], c.Ports[1], c.Ports[2], c.NomadAddr)
	writeModel(&b, c)
	return b.String()
}
