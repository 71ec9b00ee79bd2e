package admission

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/tenant"
)

// TestFairness shows that a tenant sending ten times another's rate barely
// raises the light tenant's queue wait, where a FIFO queue would make it
// wait behind the heavy tenant's whole backlog.
//
// The capacity model is deterministic, with no sleeps: two slots; each
// step, one admitted request finishes (its slot frees and the queue gets a
// Wake, as when a routed request ends), then the step's arrivals come in.
// Capacity is one request a step. The light tenant sends random bursts;
// the heavy one ten times its rate, more than the fleet serves, so the
// heavy backlog grows without end. Waits are in steps (one request's
// service time at the fleet's capacity). The light tenant's arrivals are
// the same in every run of a case: alone, beside the heavy tenant with
// fair queueing, and beside it with FIFO order.
func TestFairness(t *testing.T) {
	t.Parallel()
	const steps = 1500
	cases := []simCase{
		// Light: 0.15 requests a step in bursts of 1 to 3; heavy 1.5.
		{name: "light at 15% of capacity", burstP: 0.075, burstMin: 1, burstMax: 3, heavyTrials: 6, heavyP: 0.25},
		// Light: 0.3 a step in bursts of 2 to 6, 60% of its fair half
		// while the heavy tenant is backlogged; heavy 3.
		{name: "light at 30%, larger bursts", burstP: 0.075, burstMin: 2, burstMax: 6, heavyTrials: 12, heavyP: 0.25},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			alone := runSim(t, c, steps, false, false)
			fair := runSim(t, c, steps, true, false)
			fifo := runSim(t, c, steps, true, true)
			t.Logf("light tenant's queue wait in steps (one request's service time), %d light and %d heavy requests over %d steps:", len(alone.light), fair.heavy, steps)
			t.Logf("  alone:                             p50 %4.0f  p99 %4.0f", alone.p(50), alone.p(99))
			t.Logf("  beside 10x heavy, fair queueing:   p50 %4.0f  p99 %4.0f  (%d heavy still queued at the end)", fair.p(50), fair.p(99), fair.left)
			t.Logf("  beside 10x heavy, FIFO (baseline): p50 %4.0f  p99 %4.0f", fifo.p(50), fifo.p(99))
			// Beside a backlogged tenant every slot is taken, so even a
			// lone request waits for the next one to free, and with equal
			// weights the light tenant's bursts beyond its idle credit
			// drain at half the fleet's rate: allow four times its wait
			// alone, plus four steps.
			bound := func(r simResult, q float64) bool { return r.p(q) <= 4*alone.p(q)+4 }
			for _, q := range []float64{50, 99} {
				if !bound(fair, q) {
					t.Errorf("fair queueing: light p%.0f %.0f steps; want at most 4 x %.0f (alone) + 4", q, fair.p(q), alone.p(q))
				}
				// The same bound fails a FIFO queue: the test can fail.
				if bound(fifo, q) {
					t.Errorf("FIFO: light p%.0f %.0f steps is within the fair bound; the heavy tenant's backlog should be in its way", q, fifo.p(q))
				}
			}
		})
	}
}

// simCase is a load for runSim: each step, a light burst of burstMin to
// burstMax requests with probability burstP, and heavyTrials heavy
// requests each with probability heavyP.
type simCase struct {
	name               string
	burstP             float64
	burstMin, burstMax int
	heavyTrials        int
	heavyP             float64
}

type simResult struct {
	light       []float64 // each light request's wait, in steps
	heavy, left int
}

func (r simResult) p(q float64) float64 {
	s := slices.Clone(r.light)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*q/100))]
}

type simReq struct {
	light            bool
	arrived, started int64 // steps; started -1 while queued
	queued           bool
	done             chan struct{} // closed when a queued one's wait ends
}

// simTry is one try of a queued request and its outcome.
type simTry struct {
	r  *simReq
	ok bool
}

// runSim runs the capacity model for steps under c, with or without the
// heavy tenant, in fair or FIFO order, and reports the light tenant's waits. A light request still
// queued at the end counts with the wait it had so far.
func runSim(t *testing.T, c simCase, steps int, withHeavy, fifo bool) simResult {
	t.Helper()
	const capacity = 2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sm := &sim{
		t:     t,
		ctx:   ctx,
		q:     New(Options{Timeout: time.Hour, MaxWaiters: 1 << 20, Poll: time.Hour, fifo: fifo}),
		tries: make(chan simTry, 1),
		light: &tenant.Tenant{Name: "light"},
	}
	sm.cap.release(capacity)
	heavy := &tenant.Tenant{Name: "heavy"}
	lightRand, heavyRand := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(3, 4))
	for s := range steps {
		sm.step.Store(int64(s))
		if sm.inflight > 0 {
			sm.endOne(s)
		}
		if withHeavy {
			for range c.heavyTrials {
				if heavyRand.Float64() < c.heavyP {
					sm.arrive(heavy)
				}
			}
		}
		if lightRand.Float64() < c.burstP {
			for range c.burstMin + lightRand.IntN(c.burstMax-c.burstMin+1) {
				sm.arrive(sm.light)
			}
		}
	}
	cancel()
	sm.wg.Wait()
	return sm.result(steps)
}

// sim is one runSim run: the queue, the capacity, and every request.
type sim struct {
	t        *testing.T
	ctx      context.Context
	q        *Queue
	cap      slots
	step     atomic.Int64
	tries    chan simTry
	reqs     []*simReq
	inflight int
	queued   int
	wg       sync.WaitGroup
	light    *tenant.Tenant
}

// arrive brings in one request of who's: admitted at once, or queued with
// a goroutine awaiting its turn.
func (sm *sim) arrive(who *tenant.Tenant) {
	r := &simReq{light: who == sm.light, arrived: sm.step.Load(), started: -1}
	sm.reqs = append(sm.reqs, r)
	try := func() bool {
		ok := sm.cap.take()
		if ok {
			r.started = sm.step.Load()
		}
		if r.queued {
			select {
			case sm.tries <- simTry{r, ok}:
			case <-sm.ctx.Done():
			}
		}
		return ok
	}
	tctx := tenant.NewContext(sm.ctx, who)
	p, w, err := sm.q.arrive(tctx, "m", NoPriority, try)
	switch {
	case err != nil:
		sm.t.Fatalf("arrive: %v", err)
	case w == nil:
		sm.inflight++
		return
	}
	r.queued, r.done = true, make(chan struct{})
	sm.queued++
	sm.wg.Add(1)
	go func() {
		defer sm.wg.Done()
		defer close(r.done)
		_ = sm.q.await(tctx, p, w, try)
	}()
}

// endOne ends one admitted request at step s. The end wakes the queue; so
// does each admitted request's start, as in the gateway, until a try finds
// no room. Each Wake is one try, awaited with its bookkeeping, so that
// arrivals see the same queue in every run.
func (sm *sim) endOne(s int) {
	sm.inflight--
	sm.cap.release(1)
	for n := 0; sm.queued > 0; n++ {
		sm.q.Wake("m")
		tr := <-sm.tries
		if !tr.ok {
			if n == 0 {
				sm.t.Fatalf("step %d: the head's try after a slot freed failed", s)
			}
			break
		}
		<-tr.r.done
		sm.inflight++
		sm.queued--
	}
}

// result counts the heavy requests and collects the light ones' waits; a
// light request still queued counts its wait up to the last step.
func (sm *sim) result(steps int) simResult {
	var res simResult
	for _, r := range sm.reqs {
		switch {
		case !r.light:
			res.heavy++
			if r.started < 0 {
				res.left++
			}
		case r.started < 0:
			res.light = append(res.light, float64(int64(steps)-r.arrived))
		default:
			res.light = append(res.light, float64(r.started-r.arrived))
		}
	}
	if len(res.light) == 0 {
		sm.t.Fatal("no light requests")
	}
	return res
}
