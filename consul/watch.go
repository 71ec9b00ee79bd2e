package consul

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
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

// Watcher follows the passing instances of one service with blocking queries
// and keeps the converted set. It starts in Watch and stops with its context
// or Close.
type Watcher[T any] struct {
	health  healthAPI
	query   Query
	convert Converter[T]
	opts    WatchOptions

	changed chan struct{}
	cancel  context.CancelFunc
	stopped chan struct{}

	mu     sync.Mutex
	set    []T
	status Status
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
	opts.defaults()
	opts.Logger = opts.Logger.With("service", q.Service, "tag", q.Tag)
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher[T]{
		health:  h,
		query:   q,
		convert: convert,
		opts:    opts,
		changed: make(chan struct{}, 1),
		cancel:  cancel,
		stopped: make(chan struct{}),
	}
	go w.run(ctx)
	return w, nil
}

// Changed delivers a wake-up after the set changes (the first success counts
// as a change). Wake-ups coalesce; read Current for the whole set.
func (w *Watcher[T]) Changed() <-chan struct{} { return w.changed }

// Current returns the last known set (sorted as the converter sorts it) and
// whether any query has succeeded yet. Callers must not modify the slice.
func (w *Watcher[T]) Current() ([]T, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.set, w.status.Synced
}

// Status reports the watcher's sync state.
func (w *Watcher[T]) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

// Close stops the watcher and waits until its goroutine has returned.
func (w *Watcher[T]) Close() {
	w.cancel()
	<-w.stopped
}

func (w *Watcher[T]) run(ctx context.Context) {
	defer close(w.stopped)
	var index uint64
	failures := 0
	for ctx.Err() == nil {
		instances, next, err := fetch(ctx, w.health, w.query, index, w.opts.WaitTime)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			w.recordError(err, failures)
			// After an outage the agent may be a new one with a lower index;
			// start again with a non-blocking query.
			index = 0
			if !sleep(ctx, backoff(failures, w.opts.MinBackoff, w.opts.MaxBackoff)) {
				return
			}
			continue
		}
		if failures > 0 {
			w.opts.Logger.Info("consul watch recovered", "after_errors", failures)
		}
		failures = 0
		index = nextIndex(index, next)
		w.update(instances, index)
	}
}

// nextIndex applies Consul's rules for blocking-query indexes: go back to a
// fresh query when the index moves backwards, and never block on index 0.
func nextIndex(prev, got uint64) uint64 {
	if got < prev {
		return 0
	}
	if got < 1 {
		return 1
	}
	return got
}

func (w *Watcher[T]) recordError(err error, failures int) {
	w.mu.Lock()
	w.status.Errors++
	w.status.ConsecutiveErrors = failures
	w.status.LastError = err
	w.mu.Unlock()
	if failures == 1 || failures%10 == 0 {
		w.opts.Logger.Warn("consul watch failed; keeping the last known set", "error", err, "consecutive", failures)
	}
}

func (w *Watcher[T]) update(instances []Instance, index uint64) {
	set, skipped := w.convert(instances)
	for _, err := range skipped {
		w.opts.Logger.Warn("ignoring consul instance", "error", err)
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
	w.opts.Logger.Debug("consul set changed", "instances", len(set), "index", index)
	wake(w.changed)
	if w.opts.notify != nil {
		wake(w.opts.notify)
	}
}

// wake does a non-blocking send on a capacity-1 channel: a pending wake-up
// already says "changed".
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// backoff is the delay before retry number failures (1-based): min doubled
// per earlier failure, capped at max.
func backoff(failures int, min, max time.Duration) time.Duration {
	d := min
	for i := 1; i < failures && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
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

var _ fmt.Stringer = (*Watcher[Router])(nil)

// String names the watched query, for logs.
func (w *Watcher[T]) String() string {
	return fmt.Sprintf("consul watch %s tag=%q", w.query.Service, w.query.Tag)
}
