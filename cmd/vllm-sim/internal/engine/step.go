package engine

import (
	"context"
	"math"
	"slices"
	"time"
)

// work is one request's share of a step.
type work struct {
	r      *Request
	numNew int // tokens whose KV this step computes
}

// stepPlan is what one step's schedule decided: the requests it runs and
// the prompt and CPU-loaded tokens it computes, which its modelled duration
// charges.
type stepPlan struct {
	work         []work
	prefill, cpu int
}

// step schedules, "runs" and finishes one scheduler step.
func (e *Engine) step(ctx context.Context) error {
	start := time.Now()
	sp := e.begin(start)
	d := e.cfg.Latency.Step(sp.prefill, sp.cpu, len(e.running), e.cfg.MaxNumSeqs)
	if err := SleepUntil(ctx, start.Add(d)); err != nil {
		return err
	}
	e.finish(ctx, sp, time.Now())
	return nil
}

// begin is the scheduling half of a step, vLLM's Scheduler.schedule: it
// drops aborted requests and expired holds, then plans the step, caching
// the blocks it schedules as it goes.
func (e *Engine) begin(now time.Time) stepPlan {
	e.dropAborted()
	e.expireHeld(now)
	sp := e.schedule(now)
	e.publishLoad()
	return sp
}

// finish is the other half, vLLM's Scheduler.update_from_output, once the
// step's modelled time has passed: it publishes the step's KV events (vLLM
// takes them from the KV cache manager there, before the outputs go back
// to the API server, so a router hears of a block no later than a client
// hears of the token that computed it), then samples and delivers tokens.
func (e *Engine) finish(ctx context.Context, sp stepPlan, now time.Time) {
	e.steps++
	e.flushEvents(ctx)
	e.apply(sp.work, now)
	e.publishLoad()
	e.flushEvents(ctx) // apply records none today; any it did would go out with this step
}

// schedule plans a step: running sequences first (decode, or the rest of a
// chunked prefill), then waiting ones, first come first served, while the
// token budget, max-num-seqs and free blocks allow. A step that had to
// preempt admits nobody, as in vLLM.
//
// Each request's share is computed at once (run), as vLLM's allocate_slots
// caches the blocks of the tokens it schedules (cache_blocks, up to
// num_computed_tokens + num_new_tokens) and _update_after_schedule advances
// num_computed_tokens before the forward pass: a request scheduled later in
// the same step, or in any later one, hits them (the model writes each
// layer's KV before that layer's attention reads it). Siblings arriving
// together therefore share one prefill of their common prefix.
func (e *Engine) schedule(now time.Time) stepPlan {
	var sp stepPlan
	budget := e.cfg.MaxBatchedTokens
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		r := e.running[i]
		ok, p := e.reserve(r)
		preempted = preempted || p
		if !ok {
			break // r itself was preempted: nothing after it runs
		}
		n := min(len(r.seq.Tokens)-r.seq.NumComputed, budget)
		if n > 1 {
			sp.prefill += n
		}
		e.run(&sp, r, n)
		budget -= n
	}
	for !preempted && len(e.waiting) > 0 && len(e.running) < e.cfg.MaxNumSeqs && budget > 0 {
		r := e.waiting[0]
		m := e.pool.Lookup(&r.seq)
		if err := e.pool.Admit(&r.seq, m); err != nil {
			break // no room: it waits, and so does everyone behind it
		}
		if r.External > 0 {
			// The pulled KV, as vLLM's _update_waiting_for_remote_kv
			// caches it: every prompt token less the last.
			if n := min(r.External, len(r.seq.Tokens)-1); n > r.seq.NumComputed {
				e.pool.Compute(&r.seq, n)
			}
			r.External = 0 // after a preemption the prompt is recomputed
		}
		if !r.admitted {
			r.admitted, r.cached = true, r.seq.NumComputed
			e.metrics.admitted(len(r.Prompt), m.Tokens, now.Sub(r.Arrival))
		}
		e.waiting = e.waiting[1:]
		e.running = append(e.running, r)
		n := min(len(r.seq.Tokens)-r.seq.NumComputed, budget)
		sp.prefill += n
		sp.cpu += m.CPUTokens
		e.run(&sp, r, n)
		budget -= n
	}
	return sp
}

// run schedules n of r's tokens in the step: their KV counts as computed
// from now on and the blocks they fill enter the prefix cache, with their
// BlockStored in this step's batch.
func (e *Engine) run(sp *stepPlan, r *Request, n int) {
	e.pool.Compute(&r.seq, r.seq.NumComputed+n)
	sp.work = append(sp.work, work{r, n})
}

// reserve makes room for r's next token, preempting the newest running
// sequences (by recomputation, as vLLM does) until it fits. It reports
// whether r still runs and whether anyone was preempted.
func (e *Engine) reserve(r *Request) (runs, preempted bool) {
	for e.pool.Grow(&r.seq) != nil {
		victim := e.running[len(e.running)-1]
		e.running = e.running[:len(e.running)-1]
		e.pool.Free(&victim.seq)
		e.waiting = slices.Insert(e.waiting, 0, victim)
		e.metrics.preempted()
		preempted = true
		if victim == r {
			return false, true
		}
	}
	return true, preempted
}

// apply delivers what the step computed: every sequence whose tokens are
// all computed samples its next token. The step's blocks were cached when
// it was scheduled.
func (e *Engine) apply(plan []work, now time.Time) {
	finished := 0
	for _, w := range plan {
		r := w.r
		if r.seq.NumComputed < len(r.seq.Tokens) {
			continue // chunked prefill goes on next step
		}
		if r.Pool {
			e.pooled(r, now)
			finished++
			continue
		}
		tok := r.Output[r.generated]
		r.generated++
		r.seq.Tokens = append(r.seq.Tokens, tok)
		if r.generated == 1 {
			e.metrics.firstToken(now.Sub(r.Arrival))
		} else {
			e.metrics.interToken(now.Sub(r.lastTokenAt))
		}
		r.lastTokenAt = now
		final := r.generated == len(r.Output)
		t := Token{ID: tok, Final: final, CachedTokens: r.cached, Step: e.steps}
		if final {
			t.FinishReason = r.FinishReason
			if r.HoldForTransfer && r.FinishReason == "length" {
				t.Held = e.hold(r, now)
			} else {
				e.pool.Free(&r.seq)
			}
			e.metrics.finished(r.FinishReason, now.Sub(r.Arrival), len(r.Prompt), r.generated)
			r.done = true
			finished++
			r.left()
		}
		r.Out <- t
	}
	if finished > 0 {
		e.running = slices.DeleteFunc(e.running, func(r *Request) bool { return r.done })
	}
}

// pooled ends a pooling request whose prompt is computed: the pooler's
// output is the step's, its blocks go back to the pool (cached ones stay
// hittable) and no output token is counted, as vLLM finishes a pooling
// request after its prefill.
func (e *Engine) pooled(r *Request, now time.Time) {
	e.pool.Free(&r.seq)
	e.metrics.finished("stop", now.Sub(r.Arrival), len(r.Prompt), 0)
	r.done = true
	r.left()
	r.Out <- Token{Final: true, FinishReason: "stop", CachedTokens: r.cached, Step: e.steps}
}

// dropAborted frees the requests whose clients went away.
func (e *Engine) dropAborted() {
	gone := func(r *Request) bool {
		if r.Ctx.Err() == nil {
			return false
		}
		e.pool.Free(&r.seq)
		r.left()
		r.Out <- Token{Final: true, FinishReason: "abort", CachedTokens: r.cached}
		e.metrics.finished("abort", time.Since(r.Arrival), len(r.Prompt), r.generated)
		return true
	}
	e.running = slices.DeleteFunc(e.running, gone)
	e.waiting = slices.DeleteFunc(e.waiting, gone)
}

// publishLoad makes the engine's load visible to the server and /metrics.
func (e *Engine) publishLoad() {
	e.numRunning.Store(int64(len(e.running)))
	e.numWaiting.Store(int64(len(e.waiting)) + int64(len(e.incoming)))
	usage := e.pool.Usage()
	e.kvUsage.Store(math.Float64bits(usage))
	e.metrics.setLoad(len(e.running), len(e.waiting), usage)
}

// left calls r.Left once, if set.
func (r *Request) left() {
	if r.Left != nil {
		r.Left()
		r.Left = nil
	}
}
