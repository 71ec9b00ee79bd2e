package nomad

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/llmgw/llmgw/consul"
)

// Check statuses and modes as Nomad reports them per allocation
// (/v1/client/allocation/:alloc_id/checks).
const (
	CheckSuccess = "success"
	CheckFailure = "failure"
	CheckPending = "pending"

	// ModeHealthiness checks gate deployments; ModeReadiness ones
	// (on_update = "ignore") do not.
	ModeHealthiness = "healthiness"
	ModeReadiness   = "readiness"
)

// metaPrefix starts the tag keys read as meta (consul.Meta* names).
const metaPrefix = "llmgw-"

// Query selects the registrations a Watcher follows.
type Query struct {
	// Service is the Nomad service name (required).
	Service string
	// Tag, when set, keeps only registrations carrying it.
	Tag string
}

// servicesAPI and checksAPI are the parts of the Nomad client the fetcher
// needs.
type servicesAPI interface {
	Get(service string, q *api.QueryOptions) ([]*api.ServiceRegistration, *api.QueryMeta, error)
}

type checksAPI interface {
	Checks(allocID string, q *api.QueryOptions) (api.AllocCheckStatuses, error)
}

// MetaFromTags reads the "llmgw-key=value" tags as meta. A key given
// twice keeps its first value.
func MetaFromTags(tags []string) map[string]string {
	meta := map[string]string{}
	for _, t := range tags {
		k, v, ok := strings.Cut(t, "=")
		if !ok || !strings.HasPrefix(k, metaPrefix) {
			continue
		}
		if _, dup := meta[k]; !dup {
			meta[k] = v
		}
	}
	return meta
}

// Health sums up the checks of one service of an allocation (see the
// package comment): any healthiness check not succeeding is critical, else
// any readiness check not succeeding is warning, else passing.
func Health(service string, checks api.AllocCheckStatuses) string {
	warning := false
	for _, c := range checks {
		if c.Service != service || c.Status == CheckSuccess {
			continue
		}
		if c.Mode == ModeReadiness {
			warning = true
			continue
		}
		return consul.HealthCritical
	}
	if warning {
		return consul.HealthWarning
	}
	return consul.HealthPassing
}

// Instance converts a registration, with its health, to consul's
// catalogue entry: the node is Nomad's node id, the service id Nomad's
// registration id, the meta from the tags.
func Instance(r *api.ServiceRegistration, health string) consul.Instance {
	return consul.Instance{
		ServiceID: r.ID,
		Service:   r.ServiceName,
		Node:      r.NodeID,
		Address:   r.Address,
		Port:      r.Port,
		Tags:      r.Tags,
		Meta:      MetaFromTags(r.Tags),
		Health:    health,
	}
}

// fetch returns q's registrations as instances with their health,
// blocking until Nomad's service index passes waitIndex or wait elapses
// (waitIndex 0: no blocking), health as of the checks health holds after
// its refresh. The instances are sorted by node, then id. An allocation
// whose checks could not be read makes its instances critical; the reads
// that failed in this call are returned in unread.
func fetch(ctx context.Context, s servicesAPI, health *healthCache, q Query, waitIndex uint64, wait time.Duration) (_ []consul.Instance, index uint64, unread []error, _ error) {
	opts := (&api.QueryOptions{WaitIndex: waitIndex, WaitTime: wait}).WithContext(ctx)
	regs, meta, err := s.Get(q.Service, opts)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("nomad services query for %q: %w", q.Service, err)
	}
	kept := make([]*api.ServiceRegistration, 0, len(regs))
	var allocs []string
	seen := map[string]bool{}
	for _, r := range regs {
		if r == nil || q.Tag != "" && !slices.Contains(r.Tags, q.Tag) {
			continue
		}
		kept = append(kept, r)
		if !seen[r.AllocID] {
			seen[r.AllocID] = true
			allocs = append(allocs, r.AllocID)
		}
	}
	if unread, err = health.refresh(ctx, allocs); err != nil {
		return nil, 0, nil, err
	}
	out := make([]consul.Instance, 0, len(kept))
	for _, r := range kept {
		h := consul.HealthCritical
		if ac := health.get(r.AllocID); ac != nil && ac.err == nil {
			h = Health(r.ServiceName, ac.checks)
		}
		out = append(out, Instance(r, h))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].ServiceID < out[j].ServiceID
	})
	return out, meta.LastIndex, unread, nil
}
