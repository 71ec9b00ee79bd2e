package consul

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/consul/api"
)

// Instance is one passing service instance as the catalog reports it, free of
// Consul API types so conversion can be tested without Consul.
type Instance struct {
	// ServiceID is unique per agent; Node+ServiceID is unique in the catalog.
	ServiceID string
	Service   string
	Node      string
	// Address is the service address, or the node's when the service has none.
	Address string
	Port    int
	Tags    []string
	Meta    map[string]string
}

// Query selects the instances a Watcher follows.
type Query struct {
	// Service is the Consul service name (required).
	Service string
	// Tag, when set, keeps only instances carrying it.
	Tag string
	// Datacenter defaults to the agent's own.
	Datacenter string
	// AllowStale lets any server answer; cheaper, possibly slightly behind.
	AllowStale bool
}

// healthAPI is the part of the Consul client the fetcher needs.
type healthAPI interface {
	Service(service, tag string, passingOnly bool, q *api.QueryOptions) ([]*api.ServiceEntry, *api.QueryMeta, error)
}

// fetch returns the passing instances of q's service, blocking until the
// catalog index passes waitIndex or wait elapses (waitIndex 0: no blocking).
// The instances are sorted by node, then service ID.
func fetch(ctx context.Context, h healthAPI, q Query, waitIndex uint64, wait time.Duration) ([]Instance, uint64, error) {
	opts := (&api.QueryOptions{
		Datacenter: q.Datacenter,
		AllowStale: q.AllowStale,
		WaitIndex:  waitIndex,
		WaitTime:   wait,
	}).WithContext(ctx)
	entries, meta, err := h.Service(q.Service, q.Tag, true, opts)
	if err != nil {
		return nil, 0, fmt.Errorf("consul health query for service %q: %w", q.Service, err)
	}
	out := make([]Instance, 0, len(entries))
	for _, e := range entries {
		if e == nil || e.Service == nil {
			continue
		}
		in := Instance{
			ServiceID: e.Service.ID,
			Service:   e.Service.Service,
			Address:   e.Service.Address,
			Port:      e.Service.Port,
			Tags:      e.Service.Tags,
			Meta:      e.Service.Meta,
		}
		if e.Node != nil {
			in.Node = e.Node.Node
			if in.Address == "" {
				in.Address = e.Node.Address
			}
		}
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].ServiceID < out[j].ServiceID
	})
	return out, meta.LastIndex, nil
}
