package admission

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/router/tenant"
)

// Options configure a Queue.
type Options struct {
	// Timeout is how long a request may wait (0: never queue, answer at
	// once).
	Timeout time.Duration
	// MaxWaiters bounds the waiters of every tenant and model together.
	MaxWaiters int
	// MaxPerTenant bounds one tenant's waiters over every model (0:
	// MaxWaiters), so that one tenant cannot fill the whole queue.
	MaxPerTenant int
	// Poll is how often the head of a non-empty pool tries again without a
	// Wake (default 100 ms): engine metrics can show room before any
	// routed request ends.
	Poll time.Duration
	// Metrics, when set, get depth, waits and rejections per band.
	Metrics *Metrics

	fifo bool // tests: tag by arrival alone, the unfair baseline
}

// Queue admits requests to a model's replicas in fair order while they are
// all busy. Its zero value is not usable; call New.
type Queue struct {
	o     Options
	pools atomic.Pointer[map[string]*pool] // copy on write: read without mu
	total atomic.Int64                     // waiters; changed under mu

	mu        sync.Mutex // guards what follows and every pool's waiters
	perTenant map[string]int
	seq       uint64
}

// New returns an empty queue.
func New(o Options) *Queue {
	if o.Poll <= 0 {
		o.Poll = 100 * time.Millisecond
	}
	if o.MaxPerTenant <= 0 || o.MaxPerTenant > o.MaxWaiters {
		o.MaxPerTenant = o.MaxWaiters
	}
	q := &Queue{o: o, perTenant: map[string]int{}}
	q.pools.Store(&map[string]*pool{})
	return q
}

// Rejected is Admit's answer when the request cannot wait (a full queue, or
// no queue) or waited its whole timeout: the router's 429.
type Rejected struct {
	// Reason is queue_full, tenant_queue_full, timeout or no_queue (the
	// llmgw_queue_rejected_total label).
	Reason string
	// RetryAfter estimates when the request would be admitted: what waits
	// ahead of it over the recent rate of admissions, in whole seconds, at
	// least one.
	RetryAfter time.Duration
	// Detail says why, to follow "every replica is busy and".
	Detail string
}

func (r *Rejected) Error() string { return "every replica is busy and " + r.Detail }

// Admit runs try, the caller's attempt to schedule, until it reports true,
// and returns nil then. A try that reports false found every replica busy:
// the request waits its turn in model's pool, in the band of its tenant
// (tenant.FromContext) lowered to priority (NoPriority: the tenant's).
// Admit returns a *Rejected when the queue is full or the wait timed out,
// and the context's error, wrapped, when ctx ended first.
//
// try runs on the caller's goroutine, one pool's tries one at a time. When
// model's pool is empty Admit tries at once, without locking or
// allocating; when others wait, it queues behind them without trying.
func (q *Queue) Admit(ctx context.Context, model string, priority int, try func() bool) error {
	p, w, err := q.arrive(ctx, model, priority, try)
	if w == nil {
		return err
	}
	return q.await(ctx, p, w, try)
}

// arrive is Admit up to the wait: it returns no waiter when the request
// was admitted (nil error) or refused, and the queued waiter otherwise.
func (q *Queue) arrive(ctx context.Context, model string, priority int, try func() bool) (*pool, *waiter, error) {
	p := q.lookup(model)
	if p == nil {
		p = q.addPool(model)
	}
	gen, tried := p.gen.Load(), false
	if p.waiting.Load() == 0 {
		if try() {
			return p, nil, nil
		}
		tried = true
	}
	if q.o.Timeout <= 0 {
		if !tried && try() {
			return p, nil, nil
		}
		q.count(Band(tenant.FromContext(ctx), priority), "no_queue")
		return p, nil, &Rejected{Reason: "no_queue", RetryAfter: time.Second, Detail: "requests do not queue (queue_timeout is 0)"}
	}
	w, err := q.join(ctx, p, priority, gen, tried)
	return p, w, err
}

// Wake tells the queue that model's replicas may have room: a routed
// request ended, or one admitted from the queue has started, so the load a
// try reads now counts it. The head of the pool gets a turn.
func (q *Queue) Wake(model string) {
	p := q.lookup(model)
	if p == nil {
		return
	}
	p.gen.Add(1) // before the count: an arrival that tried before this sees it when it joins
	if p.waiting.Load() == 0 {
		return
	}
	q.mu.Lock()
	p.kick()
	q.mu.Unlock()
}

// Waiting is how many requests wait, over every pool. It takes no lock: a
// caller may check it before looking up what to Wake.
func (q *Queue) Waiting() int { return int(q.total.Load()) }

func (q *Queue) lookup(model string) *pool { return (*q.pools.Load())[model] }

// addPool returns model's pool, adding it. Pools are never removed: there
// is one per model the router has served, and an empty one holds nothing
// but its counters.
func (q *Queue) addPool(model string) *pool {
	q.mu.Lock()
	defer q.mu.Unlock()
	old := *q.pools.Load()
	if p, ok := old[model]; ok {
		return p
	}
	m := make(map[string]*pool, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	p := &pool{}
	m[model] = p
	q.pools.Store(&m)
	return p
}

// join queues a request that found every replica busy (tried) or that
// arrived while others waited, checking the caps.
func (q *Queue) join(ctx context.Context, p *pool, priority int, gen uint64, tried bool) (*waiter, error) {
	t := tenant.FromContext(ctx)
	prio := Band(t, priority)
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	own := p.queued(prio, t.Name) + 1
	switch {
	case q.perTenant[t.Name] >= q.o.MaxPerTenant:
		q.count(prio, "tenant_queue_full")
		return nil, &Rejected{Reason: "tenant_queue_full", RetryAfter: p.estimate(q.o.Timeout, now, prio, t.ShareWeight(), t.Name, own),
			Detail: fmt.Sprintf("this key's share of the queue is full (%d waiting, its limit)", q.perTenant[t.Name])}
	case q.total.Load() >= int64(q.o.MaxWaiters):
		q.count(prio, "queue_full")
		return nil, &Rejected{Reason: "queue_full", RetryAfter: p.estimate(q.o.Timeout, now, prio, t.ShareWeight(), t.Name, own),
			Detail: fmt.Sprintf("the queue is full (%d requests waiting)", q.total.Load())}
	}
	wasEmpty := p.waiting.Load() == 0
	q.seq++
	w := &waiter{turn: make(chan struct{}, 1), seq: q.seq, since: now}
	p.push(w, prio, t, q.o.fifo, q.o.Metrics)
	q.total.Add(1)
	q.perTenant[t.Name]++
	if wasEmpty {
		p.lastAdmit = now // the backlog starts: time to the first admission counts
		if !p.ticking {
			p.ticking = true
			if p.timer == nil {
				p.timer = time.AfterFunc(q.o.Poll, func() { q.tick(p) })
			} else {
				p.timer.Reset(q.o.Poll)
			}
		}
	}
	// Give the head a turn now if nothing else will: a request that joins
	// an empty pool without trying, or whose try raced a Wake that found
	// the pool empty.
	if p.holder == nil && (wasEmpty && !tried || tried && p.gen.Load() != gen) {
		p.giveTurn()
	}
	return w, nil
}

// await waits for w's turns, trying at each, until a try succeeds, the
// timeout passes or ctx ends.
func (q *Queue) await(ctx context.Context, p *pool, w *waiter, try func() bool) error {
	deadline := time.NewTimer(q.o.Timeout)
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			q.leave(p, w, "canceled")
			return fmt.Errorf("left the queue: %w", context.Cause(ctx))
		case <-deadline.C:
			return q.leave(p, w, "timeout")
		case <-w.turn:
		}
		if try() {
			q.admitted(p, w)
			return nil
		}
		q.mu.Lock()
		if p.pending { // capacity may have freed while w tried
			p.pending = false
			p.giveTurn()
		} else {
			p.holder = nil
		}
		q.mu.Unlock()
	}
}

// admitted removes w, whose try succeeded. The next head waits for a Wake:
// the load its try would read does not count w's request until that has
// started, so trying at once would see the same room again.
func (q *Queue) admitted(p *pool, w *waiter) {
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	w.band.vtime = max(w.band.vtime, w.finish)
	p.sawAdmission(now)
	q.remove(p, w, "admitted", now)
	if p.pending { // capacity freed while w tried
		p.pending = false
		p.giveTurn()
	} else {
		p.holder = nil
	}
}

// leave removes w, whose wait ended without admission, at once; a turn it
// held passes to the next head. A timeout returns the 429 to answer.
func (q *Queue) leave(p *pool, w *waiter, result string) error {
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	var rej error
	if result == "timeout" {
		f := w.flow
		q.count(w.band.prio, "timeout")
		rej = &Rejected{Reason: "timeout", RetryAfter: p.estimate(q.o.Timeout, now, w.band.prio, f.weight, f.name, f.position(w)),
			Detail: fmt.Sprintf("none had room within the queue timeout of %s", q.o.Timeout)}
	}
	q.remove(p, w, result, now)
	if p.holder == w {
		p.giveTurn()
	}
	return rej
}

// remove unlinks w and updates the counts (q.mu held).
func (q *Queue) remove(p *pool, w *waiter, result string, now time.Time) {
	prio, name := w.band.prio, w.flow.name
	p.unlink(w)
	q.total.Add(-1)
	if q.perTenant[name]--; q.perTenant[name] <= 0 {
		delete(q.perTenant, name)
	}
	if m := q.o.Metrics; m != nil {
		l := bandLabel(prio)
		m.Depth.WithLabelValues(l).Dec()
		m.Wait.WithLabelValues(l, result).Observe(now.Sub(w.since).Seconds())
	}
}

// tick is the periodic retry: the head gets a turn, as on a Wake, for as
// long as the pool holds waiters.
func (q *Queue) tick(p *pool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p.waiting.Load() == 0 {
		p.ticking = false
		return
	}
	p.gen.Add(1)
	p.kick()
	p.timer.Reset(q.o.Poll)
}

func (q *Queue) count(prio int, reason string) {
	if m := q.o.Metrics; m != nil {
		m.Rejected.WithLabelValues(bandLabel(prio), reason).Inc()
	}
}
