package nomad

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Nomad keeps the results of a provider = "nomad" service's checks on the
// client node that runs them (client/serviceregistration/checks/checkstore)
// and answers them per allocation only (/v1/client/allocation/:id/checks):
// the servers' service catalogue, its blocking queries and the event
// stream carry no check results. So the watcher reads checks allocation
// by allocation, and paces those reads so that a fleet's size does not
// set their rate.

// defaultHealthRate is how many allocations' checks a watcher reads per
// second, on average, to refresh health (WatchOptions.HealthRate).
const defaultHealthRate = 20

// healthCache remembers each registered allocation's checks and decides
// which to read again: an allocation new to it at once, then the ones
// read longest ago, each at most once per every, within a token bucket
// that fills at rate per second (up to rate × every tokens).
type healthCache struct {
	checks checksAPI
	rate   float64
	every  time.Duration
	now    func() time.Time

	tokens float64
	filled time.Time // when tokens was last topped up
	allocs map[string]*allocChecks
	reads  int     // checks reads so far
	failed []error // this refresh's failed reads
}

// allocChecks is the last read of one allocation's checks.
type allocChecks struct {
	checks api.AllocCheckStatuses
	err    error // the last read failed: its instances are critical
	read   time.Time
}

func newHealthCache(c checksAPI, rate float64, every time.Duration, now func() time.Time) *healthCache {
	return &healthCache{checks: c, rate: rate, every: every, now: now, filled: now(), allocs: map[string]*allocChecks{}}
}

// refresh brings the cache to the allocations registered now (allocs,
// without duplicates): it forgets the others, reads the new ones, then
// as many of the stale ones (read at least every ago) as the bucket
// allows, longest unread first. It returns the errors of the reads that
// failed, and fails itself only when ctx ends.
func (h *healthCache) refresh(ctx context.Context, allocs []string) ([]error, error) {
	now := h.now()
	h.tokens = min(h.tokens+h.rate*now.Sub(h.filled).Seconds(), h.burst())
	h.filled = now
	h.failed = h.failed[:0]
	registered := make(map[string]bool, len(allocs))
	var stale []string
	for _, id := range allocs {
		registered[id] = true
		a, ok := h.allocs[id]
		if !ok {
			if err := h.read(ctx, id); err != nil {
				return nil, err
			}
			continue
		}
		if now.Sub(a.read) >= h.every {
			stale = append(stale, id)
		}
	}
	for id := range h.allocs {
		if !registered[id] {
			delete(h.allocs, id)
		}
	}
	slices.SortFunc(stale, func(a, b string) int { return h.allocs[a].read.Compare(h.allocs[b].read) })
	for _, id := range stale {
		if h.tokens < 1 {
			break
		}
		h.tokens--
		if err := h.read(ctx, id); err != nil {
			return nil, err
		}
	}
	return h.failed, nil
}

// burst is the most tokens the bucket holds: one wait's worth, so that a
// fleet small enough is read whole once per every, as before pacing.
func (h *healthCache) burst() float64 { return max(h.rate*h.every.Seconds(), 1) }

// read reads one allocation's checks; a failed read is remembered as such
// (ctx ending is returned instead).
func (h *healthCache) read(ctx context.Context, id string) error {
	h.reads++
	cs, err := h.checks.Checks(id, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		err = fmt.Errorf("checks of allocation %s: %w", id, err)
		h.failed = append(h.failed, err)
	}
	h.allocs[id] = &allocChecks{checks: cs, err: err, read: h.now()}
	return nil
}

// get returns an allocation's last read (nil before its first).
func (h *healthCache) get(id string) *allocChecks { return h.allocs[id] }
