package consul

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"

	"maps"

	"github.com/hashicorp/consul/api"
)

// catalogAPI is the part of the Consul client the tag-wide watcher needs.
type catalogAPI interface {
	Services(q *api.QueryOptions) (map[string][]string, *api.QueryMeta, error)
}

// TaggedWatcher follows the passing instances of every service carrying a
// tag, whatever the service is called: model jobspecs may name their
// services freely as long as they tag them "llmgw" (docs/ARCHITECTURE.md, conventions). It
// watches the catalog's service list with a blocking query and runs one
// Watcher per tagged service, merging their instances before converting.
type TaggedWatcher[T any] struct {
	catalog catalogAPI
	health  healthAPI
	tag     string
	convert Converter[T]
	opts    WatchOptions

	changed chan struct{}
	cancel  context.CancelFunc
	stopped chan struct{}

	mu       sync.Mutex
	set      []T
	synced   bool
	children map[string]*Watcher[Instance]
	status   Status // of the catalog query
}

// WatchTagged starts following every service tagged tag. The API mirrors
// Watcher: Changed for wake-ups, Current for the whole merged set.
func WatchTagged[T any](ctx context.Context, client *api.Client, tag string, convert Converter[T], opts WatchOptions) (*TaggedWatcher[T], error) {
	if client == nil {
		return nil, errors.New("watch consul: nil client")
	}
	return watchTagged(ctx, client.Catalog(), client.Health(), tag, convert, opts)
}

// WatchAllReplicas follows model replicas in every service tagged llmgw.
func WatchAllReplicas(ctx context.Context, client *api.Client, opts WatchOptions) (*TaggedWatcher[Replica], error) {
	return WatchTagged(ctx, client, ReplicaTag, ConvertReplicas, opts)
}

func watchTagged[T any](ctx context.Context, c catalogAPI, h healthAPI, tag string, convert Converter[T], opts WatchOptions) (*TaggedWatcher[T], error) {
	if tag == "" {
		return nil, errors.New("watch consul: empty tag")
	}
	if convert == nil {
		return nil, errors.New("watch consul: nil converter")
	}
	opts.defaults()
	opts.notify = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(ctx)
	w := &TaggedWatcher[T]{
		catalog: c, health: h, tag: tag, convert: convert, opts: opts,
		changed: make(chan struct{}, 1), cancel: cancel, stopped: make(chan struct{}),
		children: map[string]*Watcher[Instance]{},
	}
	go w.run(ctx)
	return w, nil
}

// Changed delivers a wake-up after the merged set changes.
func (w *TaggedWatcher[T]) Changed() <-chan struct{} { return w.changed }

// Current returns the merged set and whether the catalog and every tagged
// service have been read at least once.
func (w *TaggedWatcher[T]) Current() ([]T, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.set, w.synced
}

// Status reports the catalog query's state; per-service errors count in
// Errors and ConsecutiveErrors too.
func (w *TaggedWatcher[T]) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.status
	for _, c := range w.children {
		cs := c.Status()
		st.Errors += cs.Errors
		st.ConsecutiveErrors = max(st.ConsecutiveErrors, cs.ConsecutiveErrors)
		if cs.LastError != nil {
			st.LastError = cs.LastError
		}
	}
	return st
}

// Services lists the tagged services being watched, sorted.
func (w *TaggedWatcher[T]) Services() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := slices.Sorted(maps.Keys(w.children))
	return names
}

// Close stops the watcher and its per-service watchers, and waits for them.
func (w *TaggedWatcher[T]) Close() {
	w.cancel()
	<-w.stopped
}

func (w *TaggedWatcher[T]) run(ctx context.Context) {
	defer close(w.stopped)
	services := make(chan []string, 1)
	catalogDone := make(chan struct{})
	go func() {
		defer close(catalogDone)
		w.watchCatalog(ctx, services)
	}()
	defer func() {
		<-catalogDone
		w.mu.Lock()
		children := w.children
		w.children = map[string]*Watcher[Instance]{}
		w.mu.Unlock()
		for _, c := range children {
			c.Close()
		}
	}()
	catalogSynced := false
	for {
		select {
		case <-ctx.Done():
			return
		case names := <-services:
			catalogSynced = true
			w.reconcile(ctx, names)
		case <-w.opts.notify:
		}
		w.merge(catalogSynced)
	}
}

// watchCatalog follows the catalog's service list and sends the names of
// tagged services whenever they change.
func (w *TaggedWatcher[T]) watchCatalog(ctx context.Context, out chan []string) {
	var index uint64
	var last []string
	first, failures := true, 0
	for ctx.Err() == nil {
		q := (&api.QueryOptions{WaitIndex: index, WaitTime: w.opts.WaitTime}).WithContext(ctx)
		all, meta, err := w.catalog.Services(q)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			w.mu.Lock()
			w.status.Errors++
			w.status.ConsecutiveErrors, w.status.LastError = failures, fmt.Errorf("consul catalog services: %w", err)
			w.mu.Unlock()
			if failures == 1 || failures%10 == 0 {
				w.opts.Logger.Warn("consul catalog watch failed; keeping the last known services", "error", err, "consecutive", failures)
			}
			index = 0
			if !sleep(ctx, backoff(failures, w.opts.MinBackoff, w.opts.MaxBackoff)) {
				return
			}
			continue
		}
		failures = 0
		index = nextIndex(index, meta.LastIndex)
		var names []string
		for name, tags := range all {
			if slices.Contains(tags, w.tag) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		w.mu.Lock()
		w.status.Synced, w.status.Index = true, index
		w.status.Queries++
		w.status.ConsecutiveErrors, w.status.LastError = 0, nil
		w.mu.Unlock()
		if !first && slices.Equal(names, last) {
			continue
		}
		first, last = false, names
		select { // replace an unread list with the newer one
		case <-out:
		default:
		}
		out <- names
	}
}

// reconcile starts watchers for new tagged services and stops those of
// services that are gone.
func (w *TaggedWatcher[T]) reconcile(ctx context.Context, names []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
		if w.children[n] != nil {
			continue
		}
		opts := w.opts
		opts.Logger = w.opts.Logger.With("service", n, "tag", w.tag)
		c, err := watch(ctx, w.health, Query{Service: n, Tag: w.tag}, identity, opts)
		if err != nil {
			w.opts.Logger.Warn("cannot watch tagged service", "service", n, "error", err)
			continue
		}
		w.children[n] = c
	}
	for n, c := range w.children {
		if !want[n] {
			c.Close()
			delete(w.children, n)
		}
	}
}

// merge converts the union of all services' instances and wakes consumers
// when the result changed.
func (w *TaggedWatcher[T]) merge(catalogSynced bool) {
	w.mu.Lock()
	names := slices.Sorted(maps.Keys(w.children))
	var all []Instance
	synced := catalogSynced
	for _, n := range names {
		in, ok := w.children[n].Current()
		synced = synced && ok
		all = append(all, in...)
	}
	w.mu.Unlock()

	set, skipped := w.convert(all)
	for _, err := range skipped {
		w.opts.Logger.Warn("ignoring consul instance", "error", err)
	}
	w.mu.Lock()
	changed := synced && (!w.synced || !reflect.DeepEqual(set, w.set))
	if changed || !w.synced {
		w.set = set
	}
	w.synced = w.synced || synced
	w.mu.Unlock()
	if changed {
		wake(w.changed)
	}
}

func identity(in []Instance) ([]Instance, []error) { return in, nil }
