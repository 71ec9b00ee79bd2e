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
	// WaitTime is how long one blocking query may wait, and so how soon a
	// change of a check's result shows (default 5 s).
	WaitTime time.Duration
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
	// The backoff defaults are consul's.
	return consul.WatchSource(ctx, registrations{services: s, checks: c, query: q, log: log}, convert, consul.WatchOptions{
		Logger: log, WaitTime: opts.WaitTime, MinBackoff: opts.MinBackoff, MaxBackoff: opts.MaxBackoff,
	})
}

// registrations is a consul.Source on Nomad's service registrations and
// their allocations' checks.
type registrations struct {
	services servicesAPI
	checks   checksAPI
	query    Query
	log      hclog.Logger
}

func (r registrations) Query(ctx context.Context, index uint64, wait time.Duration) ([]consul.Instance, uint64, error) {
	instances, next, unread, err := fetch(ctx, r.services, r.checks, r.query, index, wait)
	for _, e := range unread {
		r.log.Warn("nomad checks unreadable; the instance counts as critical", "error", e)
	}
	return instances, next, err
}

func (r registrations) String() string {
	return fmt.Sprintf("nomad watch %s tag=%q", r.query.Service, r.query.Tag)
}
