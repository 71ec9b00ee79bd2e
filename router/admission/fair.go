package admission

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/router/tenant"
)

// pool is one model's waiters. Everything but the atomics is guarded by
// Queue.mu.
type pool struct {
	waiting atomic.Int64  // Admit's fast path reads it without the lock
	gen     atomic.Uint64 // counts Wakes and ticks

	bands   []*band // non-empty, highest priority first
	holder  *waiter // has the turn: trying, or about to
	pending bool    // a Wake came while holder tried
	timer   *time.Timer
	ticking bool

	lastAdmit time.Time     // the last admission, or when the backlog began
	interval  time.Duration // moving average of the time between admissions
}

// idleCredit is how far, in requests, a tenant that has not used its
// share may start ahead of the band's virtual time: a burst of up to this
// many from a light tenant goes before a backlogged heavy tenant's next
// requests instead of alternating with them, so the light tenant waits
// about as long as it would alone. It is bounded, as a scheduler bounds
// the credit of a task that slept: once used, it comes back only as the
// virtual time moves on, so no tenant gets more than its share over time.
const idleCredit = 4

// Weights are clamped to 1/1000..1000, so tags stay finite whatever a keys
// file says.
const minWeight, maxWeight = 1e-3, 1e3

// band is one priority's waiters in a pool.
type band struct {
	prio  int
	vtime float64 // the largest finish tag admitted
	// flows holds each tenant with waiters, and an idle tenant until its
	// last tag is more than idleCredit behind vtime (it then starts as a
	// new one would); the band and its flows go when its last waiter does.
	flows map[string]*flow
	n     int
}

// flow is one tenant's waiters in a band, oldest first.
type flow struct {
	name       string
	weight     float64
	finish     float64 // its last waiter's tag
	head, tail *waiter
	n          int
}

// waiter is one queued request.
type waiter struct {
	band       *band
	flow       *flow
	finish     float64 // virtual finish tag: the order of service
	seq        uint64  // arrival order, for ties
	prev, next *waiter
	turn       chan struct{} // capacity 1: sent when it becomes holder
	since      time.Time
}

// push tags w and appends it to its tenant's flow in band prio.
func (p *pool) push(w *waiter, prio int, t *tenant.Tenant, fifo bool, m *Metrics) {
	b := p.band(prio)
	f := b.flows[t.Name]
	if f == nil {
		f = &flow{name: t.Name}
		b.flows[t.Name] = f
	}
	f.weight = min(max(t.ShareWeight(), minWeight), maxWeight) // the latest keys file's
	w.finish = max(b.vtime-idleCredit/f.weight, f.finish) + 1/f.weight
	if fifo {
		w.finish = float64(w.seq)
	}
	f.finish = w.finish
	w.band, w.flow = b, f
	if w.prev = f.tail; f.tail != nil {
		f.tail.next = w
	} else {
		f.head = w
	}
	f.tail = w
	f.n++
	b.n++
	p.waiting.Add(1)
	if m != nil {
		m.Depth.WithLabelValues(bandLabel(prio)).Inc()
	}
}

// band returns the pool's band for prio, adding it in order.
func (p *pool) band(prio int) *band {
	i := 0
	for ; i < len(p.bands); i++ {
		if p.bands[i].prio == prio {
			return p.bands[i]
		}
		if p.bands[i].prio < prio {
			break
		}
	}
	b := &band{prio: prio, flows: map[string]*flow{}}
	p.bands = append(p.bands, nil)
	copy(p.bands[i+1:], p.bands[i:])
	p.bands[i] = b
	return b
}

// unlink takes w out of its flow, dropping a flow or band it empties: an
// idle tenant keeps no credit or debt, and memory follows the waiters.
func (p *pool) unlink(w *waiter) {
	f, b := w.flow, w.band
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		f.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		f.tail = w.prev
	}
	w.prev, w.next = nil, nil
	f.n--
	b.n--
	p.waiting.Add(-1)
	if f.n == 0 && f.stale(b) {
		delete(b.flows, f.name)
	}
	if b.n == 0 {
		for i, x := range p.bands {
			if x == b {
				p.bands = append(p.bands[:i], p.bands[i+1:]...)
				break
			}
		}
	}
}

// head is the waiter served next: the smallest tag in the highest band.
func (p *pool) head() *waiter {
	if len(p.bands) == 0 {
		return nil
	}
	b := p.bands[0]
	var best *waiter
	for name, f := range b.flows {
		w := f.head
		switch {
		case w == nil:
			if f.stale(b) {
				delete(b.flows, name)
			}
		case best == nil || w.finish < best.finish || w.finish == best.finish && w.seq < best.seq:
			best = w
		}
	}
	return best
}

// stale reports whether f, idle, would start no differently from a new
// flow, so it can go.
func (f *flow) stale(b *band) bool { return f.finish <= b.vtime-idleCredit/f.weight }

// giveTurn makes the head the holder and lets it try.
func (p *pool) giveTurn() {
	p.holder = p.head()
	if p.holder != nil {
		select {
		case p.holder.turn <- struct{}{}:
		default: // it has an unread turn already
		}
	}
}

// kick answers a Wake: the head tries, or the holder tries once more when
// its try ends.
func (p *pool) kick() {
	if p.holder != nil {
		p.pending = true
		return
	}
	p.giveTurn()
}

// sawAdmission updates the admission interval's moving average.
func (p *pool) sawAdmission(now time.Time) {
	if d := now.Sub(p.lastAdmit); p.interval == 0 {
		p.interval = d
	} else {
		p.interval = (4*p.interval + d) / 5
	}
	p.lastAdmit = now
}

// queued is how many waiters tenant name has in band prio.
func (p *pool) queued(prio int, name string) int {
	for _, b := range p.bands {
		if f := b.flows[name]; b.prio == prio && f != nil {
			return f.n
		}
	}
	return 0
}

// position counts the waiters of w's flow up to w, w included.
func (f *flow) position(w *waiter) int {
	n := 1
	for x := f.head; x != nil && x != w; x = x.next {
		n++
	}
	return n
}

// estimate is Retry-After for a request of tenant name (weight) in band
// prio with own waiters of its tenant up to and including it: every waiter
// of a higher band, plus own waiters served at the tenant's share of its
// band, each at the recent interval between admissions. It is the timeout
// while no admission has been seen; whole seconds, 1 s to 1 h.
func (p *pool) estimate(timeout time.Duration, now time.Time, prio int, weight float64, name string, own int) time.Duration {
	iv := p.interval
	if iv > 0 && p.waiting.Load() > 0 {
		iv = max(iv, now.Sub(p.lastAdmit)) // the gap still open bounds the rate too
	}
	d := timeout
	if iv > 0 {
		ahead, inBand, sum := 0, 0, weight
		for _, b := range p.bands {
			if b.prio > prio {
				ahead += b.n
			}
			if b.prio == prio {
				inBand = b.n
				for _, f := range b.flows {
					if f.name != name {
						sum += f.weight
					}
				}
			}
		}
		served := math.Min(float64(inBand+1), float64(own)*sum/weight)
		d = time.Duration((float64(ahead) + served) * float64(iv))
	}
	s := math.Ceil(min(max(d, time.Second), time.Hour).Seconds())
	return time.Duration(s) * time.Second
}
