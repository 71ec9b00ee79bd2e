package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// queue holds requests that found every replica over its busy threshold
// until capacity frees up (a routed request ends, or a poll sees newer
// engine metrics), their wait runs out, or their client leaves.
type queue struct {
	timeout time.Duration
	max     int64
	poll    time.Duration
	waiting atomic.Int64

	mu sync.Mutex
	ch chan struct{} // closed and replaced on each wake
}

func newQueue(timeout time.Duration, max int) *queue {
	return &queue{timeout: timeout, max: int64(max), poll: 100 * time.Millisecond}
}

// wake releases every waiter to try again.
func (q *queue) wake() {
	q.mu.Lock()
	if q.ch != nil {
		close(q.ch)
		q.ch = nil
	}
	q.mu.Unlock()
}

func (q *queue) signal() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ch == nil {
		q.ch = make(chan struct{})
	}
	return q.ch
}

// wait retries try until it reports done, the queue timeout passes, or ctx
// ends; it reports whether try succeeded. A full queue, or a zero timeout,
// tries once.
func (q *queue) wait(ctx context.Context, try func() bool) bool {
	if try() {
		return true
	}
	if q.timeout <= 0 || q.waiting.Add(1) > q.max {
		if q.timeout > 0 {
			q.waiting.Add(-1)
		}
		return false
	}
	defer q.waiting.Add(-1)
	deadline := time.NewTimer(q.timeout)
	defer deadline.Stop()
	tick := time.NewTicker(q.poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-q.signal():
		case <-tick.C:
		}
		if try() {
			return true
		}
	}
}
