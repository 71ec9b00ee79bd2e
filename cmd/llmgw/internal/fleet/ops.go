package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// RestartRouters replaces every router, live or killed, by Routers new ones
// whose config carries scheduler as its scheduler block and hcl as
// top-level HCL after Options.RouterHCL (a policy's router options, such
// as pin_data_parallel_rank; "" for none), the way a Nomad deployment
// replaces a job's allocations: the old ones stop (and
// deregister), a killed one's stale registration is removed. It returns
// once the new routers route every shard in exact mode, which they can
// only learn from the driver's snapshot. Shards keep running.
func (f *Fleet) RestartRouters(ctx context.Context, scheduler, hcl string) error {
	f.op.Lock()
	defer f.op.Unlock()
	f.mu.Lock()
	old := f.routers
	f.routers = nil
	f.mu.Unlock()
	for _, r := range old {
		f.cat.routerDown(ctx, r)
		r.stop()
	}
	if err := f.startRouters(ctx, routing{scheduler: scheduler, hcl: hcl}); err != nil {
		return err
	}
	return f.waitExact(ctx)
}

// ResetCaches empties every shard's prefix cache (vLLM's
// POST /reset_prefix_cache, retried while requests still hold blocks) and
// returns once no live router's index holds a block of any shard.
func (f *Fleet) ResetCaches(ctx context.Context) error {
	f.op.Lock()
	defer f.op.Unlock()
	for _, s := range f.runningShards() {
		err := poll(ctx, readyTimeout, "reset of "+s.replica+"'s prefix cache", func() error {
			err := f.post(ctx, s.url+"/reset_prefix_cache", "")
			if errors.Is(err, errBusy) {
				return notYet("%v", err)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return f.waitRouters(ctx, "routers' indexes to hold nothing for the shards", func(v replicaView, listed bool) bool {
		return listed && v.GPUBlocks == 0 && v.CPUBlocks == 0
	})
}

// KillRouter sends SIGKILL to router i (in RouterURLs order at the time of
// the last Start or RestartRouters, killed ones included), as a crash
// would. Its registration stays, and its check turns critical.
func (f *Fleet) KillRouter(i int) error {
	f.op.Lock()
	defer f.op.Unlock()
	f.mu.Lock()
	if i < 0 || i >= len(f.routers) {
		n := len(f.routers)
		f.mu.Unlock()
		return fmt.Errorf("kill router %d: the fleet has routers 0..%d", i, n-1)
	}
	r := f.routers[i]
	r.killed = true
	f.mu.Unlock()
	r.p.kill()
	return nil
}

// StopShard stops shard i (in start order) the way Nomad stops an
// allocation of jobs/demo-sim.nomad.hcl: its service is
// deregistered; then, where Nomad waits the task's shutdown_delay, the
// fleet waits for what that delay is for: no live router lists the shard
// any more, and the engine has finished the requests it was running; only
// then does the driver stop and destroy the task, which tells every router
// the replica holds nothing. It returns once the engine's processes are
// gone. No request is lost to the stop.
func (f *Fleet) StopShard(ctx context.Context, i int) error {
	f.op.Lock()
	defer f.op.Unlock()
	s, err := f.takeShard(i)
	if err != nil {
		return err
	}
	err = f.deregister(ctx, s)
	if err == nil {
		err = f.drain(ctx, s)
	}
	if e := f.stopTask(ctx, s); err == nil {
		err = e
	}
	return err
}

// takeShard marks shard i stopped and returns it, or fails when it does not
// exist or was stopped already.
func (f *Fleet) takeShard(i int) (*shard, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < 0 || i >= len(f.shards) {
		return nil, fmt.Errorf("stop shard %d: the fleet has shards 0..%d", i, len(f.shards)-1)
	}
	s := f.shards[i]
	if s.stopped {
		return nil, fmt.Errorf("stop shard %d: already stopped", i)
	}
	s.stopped = true
	return s, nil
}

// Close stops everything in the reverse order of Start: routers, shards
// (deregistered, stopped and destroyed through the driver), the driver,
// Consul; every process is reaped before it returns. The work dir is
// removed when Start made it. Safe to call more than once, and on a
// half-started fleet.
func (f *Fleet) Close() error {
	f.closeOnce.Do(func() {
		f.op.Lock()
		defer f.op.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		f.mu.Lock()
		routers := f.routers
		f.routers = nil
		var shards []*shard // the running ones; StopShard handled the rest
		for _, s := range f.shards {
			if !s.stopped {
				shards = append(shards, s)
				s.stopped = true
			}
		}
		f.mu.Unlock()
		for _, r := range routers {
			f.cat.routerDown(ctx, r)
			r.stop()
		}
		var errs []error
		for _, s := range shards {
			if f.cat != nil {
				errs = append(errs, f.deregister(ctx, s))
			}
			errs = append(errs, f.stopTask(ctx, s))
		}
		if f.driver != nil {
			f.driver.Close()
		}
		for _, s := range shards {
			f.killEngine(s) // the plugin is gone: nothing may be left
		}
		if f.cat != nil {
			f.cat.stop()
		}
		if f.removeDir && f.dir != "" {
			errs = append(errs, os.RemoveAll(f.dir))
		}
		f.closeErr = errors.Join(errs...)
	})
	return f.closeErr
}

// errBusy is a shard's 409: requests still hold blocks.
var errBusy = errors.New("busy")

// post sends a JSON body (or none) and wants a 2xx answer.
func (f *Fleet) post(ctx context.Context, url, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode == http.StatusConflict:
		return fmt.Errorf("POST %s: %w: %s", url, errBusy, msg)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, msg)
	}
	return nil
}
