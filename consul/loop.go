package consul

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"
)

// Source is one blocking query of a service catalogue, which a Watcher
// repeats: Consul's health endpoint here, Nomad's service registrations
// in package nomad.
type Source interface {
	// Query returns the instances and the index they are at, blocking
	// until the catalogue's index passes index or wait elapses (index 0:
	// no blocking).
	Query(ctx context.Context, index uint64, wait time.Duration) ([]Instance, uint64, error)
	// String names the query in logs, e.g. `consul watch vllm tag="llmgw"`.
	String() string
}

// Watcher follows one Source with blocking queries and keeps the
// converted set. It starts in Watch (or WatchSource) and stops with its
// context or Close.
type Watcher[T any] struct {
	src     Source
	convert Converter[T]
	opts    WatchOptions
	pause   func(context.Context, time.Duration) bool // sleep; tests record the backoff

	changed chan struct{}
	cancel  context.CancelFunc
	stopped chan struct{}

	mu     sync.Mutex
	set    []T
	status Status
}

// WatchSource starts following src, converting each result with convert;
// opts.Logger should name the query already. Read Changed for wake-ups and
// Current for the whole set. Package nomad watches through it.
func WatchSource[T any](ctx context.Context, src Source, convert Converter[T], opts WatchOptions) (*Watcher[T], error) {
	return startWatcher(ctx, src, convert, opts, sleep)
}

func startWatcher[T any](ctx context.Context, src Source, convert Converter[T], opts WatchOptions,
	pause func(context.Context, time.Duration) bool) (*Watcher[T], error) {
	if src == nil {
		return nil, fmt.Errorf("watch: nil source")
	}
	if convert == nil {
		return nil, fmt.Errorf("%s: nil converter", src)
	}
	opts.defaults()
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher[T]{
		src: src, convert: convert, opts: opts, pause: pause,
		changed: make(chan struct{}, 1), cancel: cancel, stopped: make(chan struct{}),
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

var _ fmt.Stringer = (*Watcher[Router])(nil)

// String names the watched query, for logs.
func (w *Watcher[T]) String() string { return w.src.String() }

func (w *Watcher[T]) run(ctx context.Context) {
	defer close(w.stopped)
	var index uint64
	failures := 0
	for ctx.Err() == nil {
		instances, next, err := w.src.Query(ctx, index, w.opts.WaitTime)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			w.recordError(err, failures)
			// After an outage the agent or leader may be a new one with a
			// lower index; start again with a non-blocking query.
			index = 0
			if !w.pause(ctx, backoff(failures, w.opts.MinBackoff, w.opts.MaxBackoff)) {
				return
			}
			continue
		}
		if failures > 0 {
			w.opts.Logger.Info("watch recovered", "watch", w.src.String(), "after_errors", failures)
		}
		failures = 0
		index = nextIndex(index, next)
		w.update(instances, index)
	}
}

// nextIndex applies the rules for blocking-query indexes (Consul's, which
// Nomad's follow): go back to a fresh query when the index moves
// backwards, and never block on index 0.
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
		w.opts.Logger.Warn("watch failed; keeping the last known set", "watch", w.src.String(), "error", err, "consecutive", failures)
	}
}

// update stores a query's converted set. Whether it changed is the set's
// to say, not the index's: Nomad's index moves with registrations only,
// and a check's result can change under the same index.
func (w *Watcher[T]) update(instances []Instance, index uint64) {
	set, skipped := w.convert(instances)
	for _, err := range skipped {
		w.opts.Logger.Warn("ignoring instance", "watch", w.src.String(), "error", err)
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
	w.opts.Logger.Debug("watched set changed", "watch", w.src.String(), "instances", len(set), "index", index)
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
