package consul

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
)

// Instance is one service instance as the catalog reports it, with its
// health, free of Consul API types so conversion can be tested without
// Consul.
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
	// Health sums up the instance's node and service checks (Health*
	// constants); "" counts as passing.
	Health string
}

// Instance health, as Health sums up an instance's checks.
const (
	// HealthPassing: every check passes.
	HealthPassing = api.HealthPassing
	// HealthWarning: a check warns and none is critical. Replicas drain.
	HealthWarning = api.HealthWarning
	// HealthMaintenance: the service or its node is in maintenance mode and
	// no other check is critical. Replicas drain.
	HealthMaintenance = api.HealthMaint
	// HealthCritical: a check other than maintenance is critical.
	HealthCritical = api.HealthCritical
)

// Health sums up checks: critical when any check other than a maintenance
// one is critical, else maintenance when the node or service is in
// maintenance mode, else warning when any check warns, else passing.
// Consul's own AggregatedStatus ranks maintenance above critical; llmgw
// needs the opposite, so that a failed replica in maintenance still leaves
// routing at once instead of draining.
func Health(checks api.HealthChecks) string {
	critical, maint, warning := false, false, false
	for _, c := range checks {
		if c == nil {
			continue
		}
		if c.CheckID == api.NodeMaint || strings.HasPrefix(c.CheckID, api.ServiceMaintPrefix) {
			maint = true
			continue
		}
		switch c.Status {
		case api.HealthCritical:
			critical = true
		case api.HealthWarning:
			warning = true
		}
	}
	switch {
	case critical:
		return HealthCritical
	case maint:
		return HealthMaintenance
	case warning:
		return HealthWarning
	}
	return HealthPassing
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

// fetch returns every instance of q's service with its Health (the
// converters decide which health they use), blocking until the catalog
// index passes waitIndex or wait elapses (waitIndex 0: no blocking). The
// instances are sorted by node, then service ID.
func fetch(ctx context.Context, h healthAPI, q Query, waitIndex uint64, wait time.Duration) ([]Instance, uint64, error) {
	opts := (&api.QueryOptions{
		Datacenter: q.Datacenter,
		AllowStale: q.AllowStale,
		WaitIndex:  waitIndex,
		WaitTime:   wait,
	}).WithContext(ctx)
	entries, meta, err := h.Service(q.Service, q.Tag, false, opts)
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
			Health:    Health(e.Checks),
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
