package engine

import (
	"context"
	"slices"
	"time"
)

// work is one request's share of a step.
type work struct {
	r      *Request
	numNew int // tokens whose KV this step computes
}

// step schedules, "runs" and applies one scheduler step.
func (e *Engine) step(ctx context.Context) error {
	start := time.Now()
	e.dropAborted()
	e.expireHeld(start)
	plan, prefill, cpu := e.schedule(start)
	e.publishLoad()

	d := e.cfg.Latency.Step(prefill, cpu, len(e.running), e.cfg.MaxNumSeqs)
	if err := SleepUntil(ctx, start.Add(d)); err != nil {
		return err
	}
	e.steps++
	e.apply(plan, time.Now())
	e.publishLoad()
	e.flushEvents(ctx)
	return nil
}

// schedule plans a step: running sequences first (decode, or the rest of a
// chunked prefill), then waiting ones, first come first served, while the
// token budget, max-num-seqs and free blocks allow. A step that had to
// preempt admits nobody, as in vLLM. It returns the plan and the prompt and
// CPU-loaded tokens it computes.
func (e *Engine) schedule(now time.Time) (plan []work, prefill, cpu int) {
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
			prefill += n
		}
		plan = append(plan, work{r, n})
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
		prefill += n
		cpu += m.CPUTokens
		plan = append(plan, work{r, n})
		budget -= n
	}
	return plan, prefill, cpu
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

// apply records what the step computed: full blocks enter the cache, and
// every sequence whose tokens are all computed samples its next token.
func (e *Engine) apply(plan []work, now time.Time) {
	finished := 0
	for _, w := range plan {
		r := w.r
		e.pool.Compute(&r.seq, r.seq.NumComputed+w.numNew)
		if r.seq.NumComputed < len(r.seq.Tokens) {
			continue // chunked prefill goes on next step
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
		}
		r.Out <- t
	}
	if finished > 0 {
		e.running = slices.DeleteFunc(e.running, func(r *Request) bool { return r.done })
	}
}

// dropAborted frees the requests whose clients went away.
func (e *Engine) dropAborted() {
	gone := func(r *Request) bool {
		if r.Ctx.Err() == nil {
			return false
		}
		e.pool.Free(&r.seq)
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
	e.metrics.setLoad(len(e.running), len(e.waiting), e.pool.Usage())
}
