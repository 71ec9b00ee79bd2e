package nomad

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
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

func (o *WatchOptions) defaults() {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.WaitTime <= 0 {
		o.WaitTime = 5 * time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(10*time.Second, o.MinBackoff)
	}
}

// Watcher follows the registrations of one Nomad service with blocking
// queries and keeps the converted set. It starts in Watch and stops with
// its context or Close.
type Watcher[T any] struct {
	services servicesAPI
	checks   checksAPI
	query    Query
	convert  consul.Converter[T]
	opts     WatchOptions

	changed chan struct{}
	cancel  context.CancelFunc
	stopped chan struct{}

	mu     sync.Mutex
	set    []T
	status consul.Status
}

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
	opts.defaults()
	opts.Logger = opts.Logger.With("service", q.Service, "tag", q.Tag)
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher[T]{
		services: s, checks: c, query: q, convert: convert, opts: opts,
		changed: make(chan struct{}, 1), cancel: cancel, stopped: make(chan struct{}),
	}
	go w.run(ctx)
	return w, nil
}

// Changed delivers a wake-up after the set changes (the first success
// counts as a change). Wake-ups coalesce; read Current for the whole set.
func (w *Watcher[T]) Changed() <-chan struct{} { return w.changed }

// Current returns the last known set (sorted as the converter sorts it)
// and whether any query has succeeded yet. Callers must not modify it.
func (w *Watcher[T]) Current() ([]T, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.set, w.status.Synced
}

// Status reports the watcher's sync state.
func (w *Watcher[T]) Status() consul.Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

// Close stops the watcher and waits until its goroutine has returned.
func (w *Watcher[T]) Close() {
	w.cancel()
	<-w.stopped
}

// String names the watched query, for logs.
func (w *Watcher[T]) String() string {
	return fmt.Sprintf("nomad watch %s tag=%q", w.query.Service, w.query.Tag)
}

func (w *Watcher[T]) run(ctx context.Context) {
	defer close(w.stopped)
	var index uint64
	failures := 0
	for ctx.Err() == nil {
		instances, next, unread, err := fetch(ctx, w.services, w.checks, w.query, index, w.opts.WaitTime)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			w.recordError(err, failures)
			index = 0 // a new leader or agent may have a lower index
			if !sleep(ctx, backoff(failures, w.opts.MinBackoff, w.opts.MaxBackoff)) {
				return
			}
			continue
		}
		for _, e := range unread {
			w.opts.Logger.Warn("nomad checks unreadable; the instance counts as critical", "error", e)
		}
		if failures > 0 {
			w.opts.Logger.Info("nomad watch recovered", "after_errors", failures)
		}
		failures = 0
		index = nextIndex(index, next)
		w.update(instances, index)
	}
}

// nextIndex applies the rules for blocking-query indexes: go back to a
// fresh query when the index moves backwards, and never block on index 0.
func nextIndex(prev, got uint64) uint64 {
	if got < prev {
		return 0
	}
	return max(got, 1)
}

func (w *Watcher[T]) recordError(err error, failures int) {
	w.mu.Lock()
	w.status.Errors++
	w.status.ConsecutiveErrors = failures
	w.status.LastError = err
	w.mu.Unlock()
	if failures == 1 || failures%10 == 0 {
		w.opts.Logger.Warn("nomad watch failed; keeping the last known set", "error", err, "consecutive", failures)
	}
}

func (w *Watcher[T]) update(instances []consul.Instance, index uint64) {
	set, skipped := w.convert(instances)
	for _, err := range skipped {
		w.opts.Logger.Warn("ignoring nomad registration", "error", err)
	}
	w.mu.Lock()
	first := !w.status.Synced
	same := !first && reflect.DeepEqual(set, w.set)
	if !same {
		w.set = set
	}
	w.status.Synced = true
	w.status.Index = index
	w.status.Queries++
	w.status.ConsecutiveErrors = 0
	w.status.LastError = nil
	w.mu.Unlock()
	if same {
		return
	}
	w.opts.Logger.Debug("nomad set changed", "instances", len(set), "index", index)
	select { // a pending wake-up already says "changed"
	case w.changed <- struct{}{}:
	default:
	}
}

// backoff is the delay before retry number failures (1-based): min
// doubled per earlier failure, capped at max.
func backoff(failures int, min, max time.Duration) time.Duration {
	d := min
	for i := 1; i < failures && d < max; i++ {
		d *= 2
	}
	return clamp(d, max)
}

func clamp(d, max time.Duration) time.Duration {
	if d > max {
		return max
	}
	return d
}

// sleep waits d or until ctx ends, reporting whether the full wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
