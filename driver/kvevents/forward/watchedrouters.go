package forward

import "github.com/llmgw/llmgw/consul"

// RouterWatch is a live list of routers: consul's and nomad's watchers
// of llmgw-router are ones.
type RouterWatch interface {
	Changed() <-chan struct{}
	Current() ([]consul.Router, bool)
}

// WatchedRouters adapts any RouterWatch to a RouterSource, as
// ConsulRouters does consul's watcher: the driver finds routers in Nomad's
// service catalogue with it (nomad.WatchRegisteredRouters).
type WatchedRouters struct {
	W RouterWatch
}

var _ RouterSource = WatchedRouters{}

// Changed forwards the watcher's wake-ups.
func (w WatchedRouters) Changed() <-chan struct{} { return w.W.Changed() }

// Current returns the routers known now.
func (w WatchedRouters) Current() []RouterEndpoint {
	rs, _ := w.W.Current()
	return RouterEndpoints(rs)
}
