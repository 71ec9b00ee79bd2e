package fleet

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// drain waits, after s left Consul, until no live router lists it and its
// engine runs and queues no request: the conditions the jobspec's
// shutdown_delay gives Nomad's stop time for.
func (f *Fleet) drain(ctx context.Context, s *shard) error {
	err := poll(ctx, readyTimeout, "routers to drop "+s.replica, func() error {
		for _, r := range f.liveRouters() {
			views, err := f.replicas(ctx, r.url)
			if err != nil {
				return notYet("%s: %v", r.name, err)
			}
			if v, listed := views[s.replica]; listed {
				return notYet("%s still lists %s as %+v", r.name, s.replica, v)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return poll(ctx, readyTimeout, s.replica+" to finish its requests", func() error {
		n, err := f.inFlight(ctx, s.url)
		if err != nil {
			return notYet("%v", err)
		}
		if n > 0 {
			return notYet("%v requests running or waiting", n)
		}
		return nil
	})
}

// inFlight sums vLLM's vllm:num_requests_running and
// vllm:num_requests_waiting from the engine's /metrics.
func (f *Fleet) inFlight(ctx context.Context, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s/metrics: %s", url, resp.Status)
	}
	var n float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "vllm:num_requests_running") && !strings.HasPrefix(line, "vllm:num_requests_waiting") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("GET %s/metrics: %q: %w", url, line, err)
		}
		n += v
	}
	return n, sc.Err()
}
