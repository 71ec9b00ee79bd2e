package nomad

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/llmgw/llmgw/consul"
)

// WatchOptions tune a Watcher; zero values take the defaults.
type WatchOptions struct {
	Logger hclog.Logger
	// WaitTime is how long one blocking query may wait, and so the least
	// time between two reads of one allocation's checks (default 5 s).
	WaitTime time.Duration
	// HealthRate is how many allocations' checks the watcher reads per
	// second on average to refresh health (default 20): a fleet of up to
	// HealthRate × WaitTime allocations is read whole every WaitTime,
	// a larger one every allocations / HealthRate seconds. An allocation
	// new to the watcher is read at once, outside this rate.
	HealthRate float64
	// MinInterval is the least time between two service queries (default
	// 1 s, at most WaitTime), so that a fleet whose registrations change
	// often still costs at most one query per interval.
	MinInterval time.Duration
	// MinBackoff and MaxBackoff bound the retry delay after errors
	// (defaults 100 ms and 10 s); the delay doubles per consecutive error.
	MinBackoff, MaxBackoff time.Duration
}

// defaultWaitTime bounds a blocking query, and so how late a check's new
// result shows: Nomad's index does not move with check results.
const defaultWaitTime = 5 * time.Second

// Watcher follows the registrations of one Nomad service with blocking
// queries and keeps the converted set: consul's Watcher, on a Nomad
// source. It starts in Watch and stops with its context or Close.
type Watcher[T any] = consul.Watcher[T]

// Watch starts following q through client, converting each result with
// convert (consul.ConvertReplicas, consul.ConvertRouters, ...). Read
// Changed for wake-ups and Current for the whole set.
func Watch[T any](ctx context.Context, client *api.Client, q Query, convert consul.Converter[T], opts WatchOptions) (*Watcher[T], error) {
	if client == nil {
		return nil, errors.New("watch nomad: nil client")
	}
	return watch(ctx, client.Services(), client.Allocations(), q, convert, opts)
}

// WatchReplicas follows model replicas (tag llmgw) of a Nomad service.
func WatchReplicas(ctx context.Context, client *api.Client, service string, opts WatchOptions) (*Watcher[consul.Replica], error) {
	return Watch(ctx, client, Query{Service: service, Tag: consul.ReplicaTag}, consul.ConvertReplicas, opts)
}

// WatchRouters follows the passing llmgw-router registrations, as routers
// do to find their peers.
func WatchRouters(ctx context.Context, client *api.Client, opts WatchOptions) (*Watcher[consul.Router], error) {
	return Watch(ctx, client, Query{Service: consul.RouterService}, consul.ConvertRouters, opts)
}

// WatchRegisteredRouters follows every llmgw-router registration whatever
// its checks say, as drivers do (consul.ConvertRegisteredRouters).
func WatchRegisteredRouters(ctx context.Context, client *api.Client, opts WatchOptions) (*Watcher[consul.Router], error) {
	return Watch(ctx, client, Query{Service: consul.RouterService}, consul.ConvertRegisteredRouters, opts)
}

func watch[T any](ctx context.Context, s servicesAPI, c checksAPI, q Query, convert consul.Converter[T], opts WatchOptions) (*Watcher[T], error) {
	if q.Service == "" {
		return nil, errors.New("watch nomad: query has no service name")
	}
	if convert == nil {
		return nil, errors.New("watch nomad: nil converter")
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	log = log.With("service", q.Service, "tag", q.Tag)
	if opts.WaitTime <= 0 {
		opts.WaitTime = defaultWaitTime
	}
	if opts.HealthRate <= 0 {
		opts.HealthRate = defaultHealthRate
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = defaultMinInterval
	}
	src := &registrations{services: s, query: q, log: log, gap: min(opts.MinInterval, opts.WaitTime), pause: pause, now: time.Now,
		health: newHealthCache(c, opts.HealthRate, opts.WaitTime, time.Now)}
	// The backoff defaults are consul's.
	return consul.WatchSource(ctx, src, convert, consul.WatchOptions{
		Logger: log, WaitTime: opts.WaitTime, MinBackoff: opts.MinBackoff, MaxBackoff: opts.MaxBackoff,
	})
}

// defaultMinInterval is WatchOptions.MinInterval's default.
const defaultMinInterval = time.Second

// registrations is a consul.Source on Nomad's service registrations and
// their allocations' checks. The watcher's loop calls Query from one
// goroutine.
type registrations struct {
	services servicesAPI
	health   *healthCache
	query    Query
	log      hclog.Logger
	gap      time.Duration // least time between two service queries
	pause    func(context.Context, time.Duration) bool
	now      func() time.Time
	last     time.Time // when the last service query started
}

func (r *registrations) Query(ctx context.Context, index uint64, wait time.Duration) ([]consul.Instance, uint64, error) {
	if !r.last.IsZero() {
		if d := r.gap - r.now().Sub(r.last); d > 0 && !r.pause(ctx, d) {
			return nil, 0, ctx.Err()
		}
	}
	r.last = r.now()
	instances, next, unread, err := fetch(ctx, r.services, r.health, r.query, index, wait)
	for _, e := range unread {
		r.log.Warn("nomad checks unreadable; the instance counts as critical", "error", e)
	}
	return instances, next, err
}

// pause sleeps for d, or until ctx ends (then it reports false).
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *registrations) String() string {
	return fmt.Sprintf("nomad watch %s tag=%q", r.query.Service, r.query.Tag)
}
