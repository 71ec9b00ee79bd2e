package admission

import "time"

// Backlog is a model's queue as the autoscaling signal reads it
// (router/autoscale): what waits for the model's replicas now, and for
// how long the oldest of it has waited.
type Backlog struct {
	Waiting int
	Oldest  time.Duration // 0 when nothing waits
}

// Backlog returns model's backlog at now. The oldest waiter is the head of
// some tenant's flow, so it costs a look at each flow's head, under the
// lock, and nothing when the model's pool is empty.
func (q *Queue) Backlog(model string, now time.Time) Backlog {
	p := q.lookup(model)
	if p == nil || p.waiting.Load() == 0 {
		return Backlog{}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	b := Backlog{Waiting: int(p.waiting.Load())}
	for _, bd := range p.bands {
		for _, f := range bd.flows {
			if f.head != nil {
				b.Oldest = max(b.Oldest, now.Sub(f.head.since))
			}
		}
	}
	return b
}
