package client

import (
	"context"
	"sync"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
)

// Run replays reqs open loop: each request is sent at its scheduled time
// (and not before the request it waits for has finished), whatever the
// others are doing. onDone, if set, is called once per request as it ends,
// from the request's goroutine. Run returns every result, indexed like
// reqs, once all have ended; a cancelled ctx ends them early.
func (c *Client) Run(ctx context.Context, reqs []workload.Request, onDone func(Result)) []Result {
	results := make([]Result, len(reqs))
	done := make([]chan struct{}, len(reqs))
	pos := make(map[int]int, len(reqs))
	for i := range reqs {
		done[i] = make(chan struct{})
		pos[reqs[i].ID] = i
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() {
			defer close(done[i])
			r := &reqs[i]
			if !sleep(ctx, time.Until(start.Add(r.At))) {
				results[i] = Result{ID: r.ID, Err: "not sent: " + context.Cause(ctx).Error()}
				return
			}
			if j, ok := pos[r.After]; ok && r.After >= 0 {
				select {
				case <-done[j]:
				case <-ctx.Done():
					results[i] = Result{ID: r.ID, Err: "not sent: " + context.Cause(ctx).Error()}
					return
				}
			}
			sent := time.Since(start)
			res := c.Do(ctx, r)
			res.Sent = sent
			results[i] = res
			if onDone != nil {
				onDone(res)
			}
		})
	}
	wg.Wait()
	return results
}
