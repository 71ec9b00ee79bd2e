package driver

import (
	"fmt"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/driver/kvevents/forward"
	"github.com/llmgw/llmgw/nomad"
)

// Where the driver finds routers (the plugin config's discovery).
const (
	discoveryConsul = "consul"
	discoveryNomad  = "nomad"
)

// routerWatcher follows every registered router instance.
type routerWatcher interface {
	forward.RouterWatch
	Close()
}

// watchRouters follows c.RouterService in Consul, or in Nomad's service
// catalogue with discovery = "nomad", whatever their checks say (a new
// router gets its snapshot before its first check passes).
func (d *Driver) watchRouters(c Config) (routerWatcher, string, error) {
	if c.Discovery == discoveryNomad {
		client, err := nomad.NewClient(nomad.Config{Address: c.NomadAddress, Token: c.NomadToken, Namespace: c.NomadNamespace, Region: c.NomadRegion})
		if err != nil {
			return nil, "", err
		}
		w, err := nomad.Watch(d.ctx, client, nomad.Query{Service: c.RouterService}, consul.ConvertRegisteredRouters,
			nomad.WatchOptions{Logger: d.log.Named("nomad")})
		if err != nil {
			return nil, "", fmt.Errorf("watch %s in nomad: %w", c.RouterService, err)
		}
		return w, "nomad " + client.Address(), nil
	}
	cc := api.DefaultConfig()
	cc.Address, cc.Token = c.ConsulAddress, c.ConsulToken
	client, err := api.NewClient(cc)
	if err != nil {
		return nil, "", fmt.Errorf("consul client for %s: %w", c.ConsulAddress, err)
	}
	w, err := consul.Watch(d.ctx, client, consul.Query{Service: c.RouterService}, consul.ConvertRegisteredRouters,
		consul.WatchOptions{Logger: d.log.Named("consul")})
	if err != nil {
		return nil, "", fmt.Errorf("watch %s in consul: %w", c.RouterService, err)
	}
	return w, "consul " + c.ConsulAddress, nil
}
