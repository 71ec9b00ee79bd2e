package forward

import (
	"net"
	"strconv"

	"github.com/llmgw/llmgw/consul"
)

// ConsulRouters adapts consul's watcher of llmgw-router instances to a
// RouterSource: each router's KV-ingest port from its service meta becomes
// the endpoint URL, and a passing check makes it Ready. The driver watches
// every registered router (consul.ConvertRegisteredRouters), so a new one
// gets its snapshot before its first check passes.
type ConsulRouters struct {
	W *consul.Watcher[consul.Router]
}

var _ RouterSource = ConsulRouters{}

// Changed forwards the watcher's wake-ups.
func (c ConsulRouters) Changed() <-chan struct{} { return c.W.Changed() }

// Current returns the routers known now (none before the first successful
// query).
func (c ConsulRouters) Current() []RouterEndpoint {
	rs, _ := c.W.Current()
	return RouterEndpoints(rs)
}

// RouterEndpoints converts consul's routers to endpoints.
func RouterEndpoints(rs []consul.Router) []RouterEndpoint {
	out := make([]RouterEndpoint, 0, len(rs))
	for _, r := range rs {
		out = append(out, RouterEndpoint{
			ID:    r.ID,
			URL:   "http://" + net.JoinHostPort(r.Address, strconv.Itoa(r.IngestPort)),
			Ready: r.Health == "" || r.Health == consul.HealthPassing,
		})
	}
	return out
}
