package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/nomad"
)

// nomadNode is the node id the fleet's registrations carry: one machine.
const nomadNode = "llmgw-fleet"

// standinStartTimeout bounds the stand-in's start.
const standinStartTimeout = 30 * time.Second

// nomadCatalogue plays Nomad for services with provider = "nomad": the
// stand-in of Nomad's services API (cmd/nomad-standin, a process of its
// own, so that this binary links no test support) serves the catalogue,
// and the fleet does what a Nomad client does from the service blocks of
// jobs/demo-sim-nomad.nomad.hcl and jobs/llmgw-router-nomad.nomad.hcl: it
// registers each shard and router with its llmgw tags over the
// stand-in's control endpoints, runs their HTTP checks on /health every
// checkInterval and reports each result, and deregisters a service
// before its task stops. Routers do not register themselves on Nomad, so
// the fleet allocates their ports, as Nomad does.
type nomadCatalogue struct {
	p    *proc
	addr string // the API's base URL
	http *http.Client

	ctx    context.Context // ends the checkers
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	checkers map[string]*checker // by registration id
}

// nomadCheck is one check result as the stand-in takes it (nomadtest.Check).
type nomadCheck struct {
	Check      string
	Group      string
	Mode       string `json:",omitempty"`
	Output     string
	Service    string
	Status     string
	StatusCode int    `json:",omitempty"`
	Task       string `json:",omitempty"`
}

// startNomad starts the stand-in on a free loopback port and waits until
// it answers.
func startNomad(ctx context.Context, binDir, dir string, client *http.Client) (*nomadCatalogue, error) {
	ports, err := netport.FreeTCPs(1)
	if err != nil {
		return nil, fmt.Errorf("nomad stand-in port: %w", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	p, err := startProc("nomad-standin", filepath.Join(dir, "nomad-standin.log"),
		[]string{filepath.Join(binDir, "nomad-standin"), "-listen", addr}, nil)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n := &nomadCatalogue{p: p, addr: "http://" + addr, http: client, ctx: cctx, cancel: cancel, checkers: map[string]*checker{}}
	err = poll(ctx, standinStartTimeout, "the nomad stand-in to answer", func() error {
		if p.exited() {
			return fmt.Errorf("nomad-standin exited:\n%s", p.tail())
		}
		if err := n.do(ctx, http.MethodGet, "/v1/services", nil); err != nil {
			return notYet("%v", err)
		}
		return nil
	})
	if err != nil {
		n.stop()
		return nil, err
	}
	return n, nil
}

// do sends one request to the stand-in, body as JSON, and wants a 2xx.
func (n *nomadCatalogue) do(ctx context.Context, method, path string, body any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("nomad stand-in %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, n.addr+path, rd)
	if err != nil {
		return fmt.Errorf("nomad stand-in %s %s: %w", method, path, err)
	}
	resp, err := n.http.Do(req)
	if err != nil {
		return fmt.Errorf("nomad stand-in %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("nomad stand-in %s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

func (n *nomadCatalogue) register(ctx context.Context, r nomadapi.ServiceRegistration) error {
	return n.do(ctx, http.MethodPut, "/_standin/registrations", r)
}

func (n *nomadCatalogue) deregister(ctx context.Context, id string) error {
	return n.do(ctx, http.MethodDelete, "/_standin/registrations/"+url.PathEscape(id), nil)
}

func (n *nomadCatalogue) setCheck(ctx context.Context, alloc string, c nomadCheck) error {
	return n.do(ctx, http.MethodPut, "/_standin/checks/"+url.PathEscape(alloc), c)
}

func (n *nomadCatalogue) driverConfig(cfg map[string]any) {
	cfg["discovery"] = DiscoveryNomad
	cfg["nomad_address"] = n.addr
}

func (n *nomadCatalogue) routerConf(rc *routerConf) error {
	ports, err := netport.FreeTCPs(3)
	if err != nil {
		return fmt.Errorf("router ports: %w", err)
	}
	rc.NomadAddr = n.addr
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
func (n *nomadCatalogue) registerShard(ctx context.Context, s *shard) error {
	c := n.startChecker(s.serviceID, s.allocID, nomadCheck{
		Check: `service: "vllm" check`, Service: "vllm", Task: "sim",
		Group: fmt.Sprintf("demo-sim-nomad.sim[%d]", s.index)}, s.url+"/health")
	err := n.register(ctx, nomadapi.ServiceRegistration{
		ID: c.id, ServiceName: "vllm", Namespace: "default", NodeID: nomadNode, Datacenter: "dc1",
		JobID: "demo-sim-nomad", AllocID: s.allocID, Address: "127.0.0.1", Port: s.port,
		Tags: nomadTags(s.meta()),
	})
	if err != nil {
		n.stopChecker(s.serviceID)
		return fmt.Errorf("register %s: %w", s.serviceID, err)
	}
	return nil
}

// nomadTags is meta as Nomad service tags, "key=value" after the replica
// tag, in key order: Nomad's services carry no meta, so llmgw reads it
// from tags.
func nomadTags(meta map[string]string) []string {
	tags := []string{consul.ReplicaTag}
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		tags = append(tags, k+"="+meta[k])
	}
	return tags
}

func (n *nomadCatalogue) deregisterShard(ctx context.Context, s *shard) error {
	n.stopChecker(s.serviceID)
	if err := n.deregister(ctx, s.serviceID); err != nil {
		return fmt.Errorf("deregister %s: %w", s.serviceID, err)
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
	c := n.startChecker(r.serviceID, alloc, nomadCheck{
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
	err = n.register(ctx, nomadapi.ServiceRegistration{
		ID: r.serviceID, ServiceName: consul.RouterService, Namespace: "default", NodeID: nomadNode, Datacenter: "dc1",
		JobID: "llmgw-router-nomad", AllocID: alloc, Address: "127.0.0.1", Port: rc.Ports[0],
		Tags: []string{"http", consul.MetaIngestPort + "=" + strconv.Itoa(rc.Ports[1]), consul.MetaAdminPort + "=" + strconv.Itoa(rc.Ports[2])},
	})
	if err != nil {
		n.stopChecker(r.serviceID)
		return fmt.Errorf("register %s: %w", r.serviceID, err)
	}
	return nil
}

// routerDown deregisters the router before it stops, as Nomad does before
// its shutdown_delay; a killed router's registration goes too.
func (n *nomadCatalogue) routerDown(ctx context.Context, r *router) {
	n.stopChecker(r.serviceID)
	// Not registered when its check never passed; nothing else to do.
	_ = n.deregister(ctx, r.serviceID)
}

// stop ends the checkers, then the stand-in, and reaps it.
func (n *nomadCatalogue) stop() {
	n.cancel()
	n.wg.Wait()
	n.p.stop(5 * time.Second)
}

// checker runs one service's HTTP check, as the Nomad client runs a
// provider = "nomad" check, and reports each result to the catalogue.
type checker struct {
	id, alloc string
	check     nomadCheck // the check's names
	url       string
	cancel    context.CancelFunc
	done      chan struct{}

	mu   sync.Mutex
	last string
}

// startChecker runs the check once, reports it, and goes on every
// checkInterval until stopChecker.
func (n *nomadCatalogue) startChecker(id, alloc string, c nomadCheck, url string) *checker {
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
	// The status counts once the stand-in holds it, so that a caller who
	// saw it passing knows routers can read it.
	status := c.Status
	if err := n.setCheck(ctx, ch.alloc, c); err != nil {
		if ctx.Err() != nil {
			return
		}
		status = "unreported (" + err.Error() + ")"
	}
	ch.mu.Lock()
	ch.last = status
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
