package driver

import (
	"fmt"
	"net/http"
	"os"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/driver/kvevents/forward"
)

// forwarding carries the store's block state to every router instance
// registered in Consul, passing its check or not yet: a watcher of the
// router service and the forwarder's per-router sessions (snapshot, then
// net deltas).
type forwarding struct {
	config  Config
	watcher *consul.Watcher[consul.Router]
	fwd     *forward.Forwarder
}

func (f *forwarding) close() {
	f.fwd.Close()
	f.watcher.Close()
}

// startForwarding (re)starts forwarding for the long-lived plugin instance.
// Without a store or an ingest token there is nothing to do: routers then
// route this node's replicas without exact KV state.
func (d *Driver) startForwarding(c Config) error {
	if d.opts.Store == nil {
		return nil
	}
	d.fwdMu.Lock()
	defer d.fwdMu.Unlock()
	if d.fwd != nil && d.fwd.config == c {
		return nil // SetConfig repeated with the same config
	}
	if d.fwd != nil {
		d.fwd.close()
		d.fwd = nil
	}
	if c.IngestToken == "" {
		d.log.Warn("no ingest_token configured: KV block state is not forwarded to routers")
		return nil
	}
	cc := api.DefaultConfig()
	cc.Address, cc.Token = c.ConsulAddress, c.ConsulToken
	client, err := api.NewClient(cc)
	if err != nil {
		return fmt.Errorf("consul client for %s: %w", c.ConsulAddress, err)
	}
	w, err := consul.Watch(d.ctx, client, consul.Query{Service: c.RouterService}, consul.ConvertRegisteredRouters,
		consul.WatchOptions{Logger: d.log.Named("consul")})
	if err != nil {
		return fmt.Errorf("watch %s in consul: %w", c.RouterService, err)
	}
	id := d.opts.DriverID
	if id == "" {
		if id, err = os.Hostname(); err != nil || id == "" {
			id = "nomad-driver-vllm"
		}
	}
	var routers forward.RouterSource = forward.ConsulRouters{W: w}
	var hc *http.Client
	if c.IngestCAFile != "" {
		if hc, err = forward.TLSClient(c.IngestCAFile); err != nil {
			w.Close()
			return err
		}
		routers = forward.HTTPS{Source: routers}
	}
	fwd, err := forward.Start(d.opts.Store, routers, forward.Config{
		DriverID: id, Token: c.IngestToken, FlushInterval: c.KVFlushInterval, KeepAlive: c.KVKeepAlive, Client: hc, Logger: d.log.Named("forward"),
	})
	if err != nil {
		w.Close()
		return fmt.Errorf("start kv forwarder: %w", err)
	}
	d.fwd = &forwarding{config: c, watcher: w, fwd: fwd}
	d.log.Info("forwarding kv block state to routers", "consul", c.ConsulAddress, "service", c.RouterService, "driver_id", id)
	return nil
}

func (d *Driver) stopForwarding() {
	d.fwdMu.Lock()
	defer d.fwdMu.Unlock()
	if d.fwd != nil {
		d.fwd.close()
		d.fwd = nil
	}
}
