package fleet

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/consul"
)

// Where the fleet registers its services (Options.Discovery).
const (
	// DiscoveryConsul runs a Consul agent (consul.go); the default.
	DiscoveryConsul = "consul"
	// DiscoveryNomad runs the stand-in of Nomad's services API
	// (cmd/nomad-standin, a process of its own) and plays the Nomad
	// client's part for services with provider = "nomad" (nomad.go).
	DiscoveryNomad = "nomad"
)

// catalogue is the service discovery the fleet runs: it registers and
// deregisters shards and routers as a Nomad client does from the
// jobspecs' service blocks, and tells the driver and the routers where to
// look.
type catalogue interface {
	// driverConfig adds to the plugin config where drivers find routers.
	driverConfig(cfg map[string]any)
	// routerConf fills in a router config's listeners and discovery.
	routerConf(c *routerConf) error
	registerShard(ctx context.Context, s *shard) error
	deregisterShard(ctx context.Context, s *shard) error
	// routerUp returns once the started router r is registered and its
	// check passes, with r.url and r.adminURL set.
	routerUp(ctx context.Context, r *router, c routerConf) error
	// routerDown is called before r stops (or after it was killed): a
	// registration the router does not remove itself goes.
	routerDown(ctx context.Context, r *router)
	// stop ends the catalogue; nothing of it is left running.
	stop()
}

// consulCatalogue is the Consul dev agent: shards are registered with an
// HTTP check that the agent runs, routers register themselves.
type consulCatalogue struct{ a *consulAgent }

func (c consulCatalogue) driverConfig(cfg map[string]any) { cfg["consul_address"] = c.a.httpAddr }

func (c consulCatalogue) routerConf(rc *routerConf) error {
	rc.ConsulAddr = c.a.httpAddr
	return nil
}

func (c consulCatalogue) registerShard(ctx context.Context, s *shard) error {
	_, err := consul.Register(ctx, c.a.client, consul.Service{
		Name: "vllm", ID: s.serviceID, Address: "127.0.0.1", Port: s.port,
		Tags:  []string{consul.ReplicaTag},
		Meta:  s.meta(),
		Check: consul.HTTPCheck{URL: s.url + "/health", Interval: checkInterval, Timeout: checkInterval},
	})
	return err
}

func (c consulCatalogue) deregisterShard(ctx context.Context, s *shard) error {
	if err := c.a.client.Agent().ServiceDeregisterOpts(s.serviceID, (&api.QueryOptions{}).WithContext(ctx)); err != nil {
		return fmt.Errorf("deregister %s: %w", s.serviceID, err)
	}
	return nil
}

// routerUp waits for the router's own registration, which carries its
// listeners, and for its check to pass, so that Consul DNS and
// `llmgw status` list it.
func (c consulCatalogue) routerUp(ctx context.Context, r *router, _ routerConf) error {
	return poll(ctx, routerStartTimeout, r.name+" to register in consul", func() error {
		if r.p.exited() {
			return fmt.Errorf("%s exited:\n%s", r.name, r.p.tail())
		}
		svc, _, err := c.a.client.Agent().Service(r.serviceID, (&api.QueryOptions{}).WithContext(ctx))
		if err != nil {
			return notYet("%v", err)
		}
		admin, ok := svc.Meta[consul.MetaAdminPort]
		if !ok {
			return fmt.Errorf("%s registered without meta %s", r.name, consul.MetaAdminPort)
		}
		r.url = "http://" + svc.Address + ":" + strconv.Itoa(svc.Port)
		checks, _, err := c.a.client.Health().Checks(svc.Service, (&api.QueryOptions{}).WithContext(ctx))
		if err != nil {
			return notYet("%v", err)
		}
		for _, c := range checks {
			if c.ServiceID == r.serviceID && c.Status != api.HealthPassing {
				return notYet("%s's check is %s", r.name, c.Status)
			}
		}
		r.adminURL = "http://" + net.JoinHostPort(svc.Address, admin)
		return nil
	})
}

// routerDown removes a killed router's stale registration; a stopping
// router deregisters itself.
func (c consulCatalogue) routerDown(ctx context.Context, r *router) {
	if r.killed {
		_ = c.a.client.Agent().ServiceDeregisterOpts(r.serviceID, (&api.QueryOptions{}).WithContext(ctx))
	}
}

func (c consulCatalogue) stop() { c.a.stop() }
