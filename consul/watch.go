package consul

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"
)

// Converter turns fetched instances into the watcher's values, reporting the
// instances it skipped. ConvertReplicas and ConvertRouters are converters.
type Converter[T any] func([]Instance) ([]T, []error)

// WatchOptions tune a Watcher; zero values take the defaults.
type WatchOptions struct {
	Logger hclog.Logger
	// WaitTime is how long one blocking query may wait (default 5 min).
	WaitTime time.Duration
	// MinBackoff and MaxBackoff bound the retry delay after errors
	// (defaults 100 ms and 10 s); the delay doubles per consecutive error.
	MinBackoff, MaxBackoff time.Duration

	// notify, when set, also receives a wake-up on every change (the
	// tag-wide watcher merges its per-service watchers through it).
	notify chan struct{}
}

func (o *WatchOptions) defaults() {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.WaitTime <= 0 {
		o.WaitTime = 5 * time.Minute
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(10*time.Second, o.MinBackoff)
	}
}

// Status describes the watcher's view of Consul, for health and metrics.
type Status struct {
	// Synced is true once a query has succeeded; the set is meaningful only then.
	Synced bool
	// Index is the Consul index of the current set.
	Index uint64
	// Queries counts successful queries, changed or not.
	Queries uint64
	// Errors counts failed queries since the start.
	Errors uint64
	// ConsecutiveErrors counts failures since the last success; while it is
	// above zero the set is the last one known.
	ConsecutiveErrors int
	LastError         error
}

// Watch starts following q through client, converting each result with
// convert. Read Changed for wake-ups and Current for the whole set.
func Watch[T any](ctx context.Context, client *api.Client, q Query, convert Converter[T], opts WatchOptions) (*Watcher[T], error) {
	if client == nil {
		return nil, errors.New("watch consul: nil client")
	}
	return watch(ctx, client.Health(), q, convert, opts)
}

// WatchReplicas follows passing model replicas (tag llmgw) of a service.
func WatchReplicas(ctx context.Context, client *api.Client, service string, opts WatchOptions) (*Watcher[Replica], error) {
	return Watch(ctx, client, Query{Service: service, Tag: ReplicaTag}, ConvertReplicas, opts)
}

// WatchRouters follows passing llmgw-router instances, as drivers do.
func WatchRouters(ctx context.Context, client *api.Client, opts WatchOptions) (*Watcher[Router], error) {
	return Watch(ctx, client, Query{Service: RouterService}, ConvertRouters, opts)
}

func watch[T any](ctx context.Context, h healthAPI, q Query, convert Converter[T], opts WatchOptions) (*Watcher[T], error) {
	if q.Service == "" {
		return nil, errors.New("watch consul: query has no service name")
	}
	if convert == nil {
		return nil, errors.New("watch consul: nil converter")
	}
	if opts.Logger != nil {
		opts.Logger = opts.Logger.With("service", q.Service, "tag", q.Tag)
	}
	return WatchSource(ctx, healthSource{h, q}, convert, opts)
}

// healthSource is a Query on Consul's health endpoint.
type healthSource struct {
	health healthAPI
	query  Query
}

func (s healthSource) Query(ctx context.Context, index uint64, wait time.Duration) ([]Instance, uint64, error) {
	return fetch(ctx, s.health, s.query, index, wait)
}

func (s healthSource) String() string {
	return fmt.Sprintf("consul watch %s tag=%q", s.query.Service, s.query.Tag)
}
