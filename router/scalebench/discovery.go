package scalebench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/nomad"
	"github.com/llmgw/llmgw/nomad/nomadtest"
)

// DiscoveryPoint is what Nomad replica discovery costs the Nomad servers
// at one fleet size: DiscoveryRouters routers each watch the replicas'
// service with default options (nomad.WatchReplicas: blocking service
// reads, allocation checks read at a paced rate) against the Nomad
// stand-in (nomad/nomadtest), and the stand-in counts their API calls.
// Figures are calls per second for all the routers together, once every
// watcher has its first set and one blocking wait has passed: the
// median of the runs with its range, and the runs' medians of the two
// kinds of call.
type DiscoveryPoint struct {
	Replicas        int     `json:"replicas"`
	Routers         int     `json:"routers"`
	CallsPerSec     float64 `json:"calls_per_s"`
	CallsMin        float64 `json:"calls_min"`
	CallsMax        float64 `json:"calls_max"`
	ChecksPerSec    float64 `json:"checks_per_s"`
	ServicesPerSec  float64 `json:"services_per_s"`
	PerRouterPerSec float64 `json:"calls_per_router_per_s"`
}

// discoveryWait is nomad.WatchOptions' default WaitTime: after one
// blocking wait, each watcher reads checks at its paced rate.
const discoveryWait = 5 * time.Second

// DiscoverySweep measures discovery's calls at each fleet size of
// cfg.Discovery, each figure the median of cfg.Runs windows of
// cfg.DiscoveryWindow.
func DiscoverySweep(ctx context.Context, cfg Config) ([]DiscoveryPoint, error) {
	if cfg.Runs < 1 || cfg.DiscoveryWindow <= 0 || cfg.DiscoveryRouters < 1 {
		return nil, fmt.Errorf("discovery sweep: runs %d, window %v and routers %d must be positive", cfg.Runs, cfg.DiscoveryWindow, cfg.DiscoveryRouters)
	}
	var out []DiscoveryPoint
	for _, n := range cfg.Discovery {
		p, err := discoveryPoint(ctx, n, cfg)
		if err != nil {
			return nil, fmt.Errorf("discovery at %d replicas: %w", n, err)
		}
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "discovery: replicas %5d routers %d: %6.1f calls/s [%.1f-%.1f] (checks %.1f, services %.2f)\n",
				n, p.Routers, p.CallsPerSec, p.CallsMin, p.CallsMax, p.ChecksPerSec, p.ServicesPerSec)
		}
		out = append(out, p)
	}
	return out, nil
}

func discoveryPoint(ctx context.Context, replicas int, cfg Config) (DiscoveryPoint, error) {
	s := nomadtest.New("")
	if err := s.Listen("127.0.0.1:0"); err != nil {
		return DiscoveryPoint{}, err
	}
	defer s.Close()
	for i := range replicas {
		alloc := fmt.Sprintf("%08x-1c2d-4e5f-a1b2-%012x", i, i*7919)
		s.Register(api.ServiceRegistration{
			ID: "_nomad-task-" + alloc + "-main-vllm-http", ServiceName: "vllm", NodeID: "node-1", AllocID: alloc, JobID: "m",
			Address: "127.0.0.1", Port: 9000 + i%50000,
			Tags: []string{"llmgw", "llmgw-model=m", "llmgw-replica=" + alloc + "/main", "llmgw-kv-events=true", "llmgw-block-size=16"},
		})
		s.SetCheck(alloc, nomadtest.Check{Check: "alive", Service: "vllm", Status: "success"})
	}
	client, err := nomad.NewClient(nomad.Config{Address: s.Addr()})
	if err != nil {
		return DiscoveryPoint{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ws := make([]*nomad.Watcher[consul.Replica], 0, cfg.DiscoveryRouters)
	defer func() {
		for _, w := range ws {
			w.Close()
		}
	}()
	for range cfg.DiscoveryRouters {
		w, err := nomad.WatchReplicas(ctx, client, "vllm", nomad.WatchOptions{WaitTime: cfg.DiscoveryWait})
		if err != nil {
			return DiscoveryPoint{}, err
		}
		ws = append(ws, w)
	}
	if err := waitForSets(ctx, ws, replicas); err != nil {
		return DiscoveryPoint{}, err
	}
	warm := cfg.DiscoveryWait
	if warm <= 0 {
		warm = discoveryWait
	}
	if !sleepCtx(ctx, warm) {
		return DiscoveryPoint{}, ctx.Err()
	}
	var calls, checks, services []float64
	for range cfg.Runs {
		before, start := s.Calls(), time.Now()
		if !sleepCtx(ctx, cfg.DiscoveryWindow) { // the watchers run on their own
			return DiscoveryPoint{}, ctx.Err()
		}
		after, secs := s.Calls(), time.Since(start).Seconds()
		calls = append(calls, float64(after.Total()-before.Total())/secs)
		checks = append(checks, float64(after.Checks-before.Checks)/secs)
		services = append(services, float64(after.Services+after.Service-before.Services-before.Service)/secs)
	}
	p := DiscoveryPoint{Replicas: replicas, Routers: cfg.DiscoveryRouters, CallsPerSec: median(calls), CallsMin: slices.Min(calls),
		CallsMax: slices.Max(calls), ChecksPerSec: median(checks), ServicesPerSec: median(services)}
	p.PerRouterPerSec = p.CallsPerSec / float64(p.Routers)
	return p, nil
}

// waitForSets waits until every watcher holds all replicas (a minute at
// most).
func waitForSets(ctx context.Context, ws []*nomad.Watcher[consul.Replica], replicas int) error {
	deadline := time.Now().Add(time.Minute)
	for _, w := range ws {
		for {
			rs, _ := w.Current()
			if len(rs) == replicas {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("a watcher holds %d of %d replicas after a minute", len(rs), replicas)
			}
			if !sleepCtx(ctx, 20*time.Millisecond) {
				return ctx.Err()
			}
		}
	}
	return nil
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
