package driver

import (
	"fmt"
	"net/http"
	"os"
	"reflect"

	"github.com/llmgw/llmgw/driver/kvevents/forward"
)

// forwarding carries the store's block state to every router instance
// registered in Consul (or Nomad), passing its check or not yet: a watcher of the
// router service and the forwarder's per-router sessions (snapshot, then
// net deltas).
type forwarding struct {
	config  Config
	watcher routerWatcher
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
	if d.fwd != nil && reflect.DeepEqual(d.fwd.config, c) {
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
	w, where, err := d.watchRouters(c)
	if err != nil {
		return err
	}
	id := d.opts.DriverID
	if id == "" {
		if id, err = os.Hostname(); err != nil || id == "" {
			id = "nomad-driver-vllm"
		}
	}
	var routers forward.RouterSource = forward.WatchedRouters{W: w}
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
	d.log.Info("forwarding kv block state to routers", "discovery", where, "service", c.RouterService, "driver_id", id)
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
