package route

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/tenant"
	"github.com/llmgw/llmgw/router/tracing"
)

// Plan decides where in's request goes: parse, tenancy, prompt keys,
// the tenant's limits, admission and scheduling, in that order (see the
// package comment). The tenant is the one ctx carries
// (tenant.FromContext). A refused request gets an *Error and holds
// nothing; a plan is given back with Release once sent.
func (pl *Planner) Plan(ctx context.Context, in Input) (*Plan, *Error) {
	return pl.plan(ctx, in, pl.d.Options.Attempts-1+fallbackSpare)
}

// plan is Plan ranking at most fallbacks replicas after the chosen one
// (0: all of them, for Explain), in a span of its own when ctx's is
// recorded (trace.go).
func (pl *Planner) plan(ctx context.Context, in Input, fallbacks int) (*Plan, *Error) {
	ctx, span := tracing.Start(ctx, SpanRoute, trace.SpanKindInternal)
	p, e := pl.decide(ctx, in, fallbacks)
	if span.IsRecording() {
		traceDecision(span, p, e)
	}
	span.End()
	return p, e
}

// decide is plan without its span.
func (pl *Planner) decide(ctx context.Context, in Input, fallbacks int) (*Plan, *Error) {
	start := time.Now()
	band, err := admission.ParsePriority(in.Priority)
	if err != nil {
		return nil, &Error{Status: http.StatusBadRequest, Message: err.Error()}
	}
	req, err := openai.Parse(in.Kind, in.Body)
	if err != nil {
		return nil, &Error{Status: http.StatusBadRequest, Message: err.Error()}
	}
	req.Forward, req.Responses = in.Forward, in.Responses
	ten := tenant.FromContext(ctx)
	if e := forTenant(ten, req); e != nil {
		return nil, e
	}
	cold, e := pl.holdCold(ctx, in, req.Model)
	if e != nil {
		return nil, e
	}
	t, e := pl.target(req.Model)
	if e != nil {
		return nil, e
	}
	keep, e := pl.taskFilter(t.Model, in.Kind)
	if e != nil {
		return nil, e
	}
	res, err := pl.d.Prompts.ComputeContext(ctx, req, t)
	if err != nil {
		return nil, &Error{Status: http.StatusBadRequest, Message: err.Error()}
	}
	grant, limits, e := pl.limit(ten, req, res.Tokens)
	if e != nil {
		return nil, e
	}
	p := pl.getPlan()
	p.Request, p.Grant, p.Limits, p.keep = req, grant, limits, keep
	p.fill(res, scheduler.Request{Model: t.Model, SessionID: sessionKey(ten, in.Session), Fallbacks: fallbacks}, t.BlockSize)
	sched, queued, e := pl.admitAndSchedule(ctx, p, band)
	if e != nil {
		grant.Finish(0) // never sent: only the request counts
		pl.Release(p)
		return nil, e
	}
	p.Overhead = time.Since(start) - queued - cold
	p.Attempts = pl.attempts(p.Attempts[:0], &p.decision, p.BlockTokens, nil)
	if p.pd.remote {
		p.pd.attempts = pl.attempts(p.pd.attempts[:0], &p.pd.decision, p.BlockTokens, nil)
	}
	pl.observeOverhead(res, sched, p.Overhead)
	return p, nil
}

// fill sets p's prompt and its scheduling request, sreq with the prompt's
// keys and counts added.
func (p *Plan) fill(res prompt.Result, sreq scheduler.Request, blockSize int) {
	p.PromptTokens, p.ExactTokens = res.Tokens, res.Keys != nil
	p.BlockTokens = blockSize
	if res.Keys == nil {
		p.BlockTokens = textBlockTokens
	}
	sreq.Keys, sreq.ApproxKeys, sreq.BlockTokens, sreq.PromptTokens = res.Keys, res.ApproxKeys, p.BlockTokens, res.Tokens
	p.sreq.Reset(sreq)
}

// sessionKey is the session id the scheduler keys session affinity by:
// the client's id within its tenant, so that one tenant cannot re-pin,
// or follow, another's session by sending its id. A NUL cannot occur in
// a header value, so the key is unambiguous. Requests without a key
// (tenant.Anonymous) share one namespace, as before keys existed.
func sessionKey(t *tenant.Tenant, id string) string {
	if id == "" || t == nil || t == tenant.Anonymous {
		return id
	}
	return t.Name + "\x00" + id
}

// target is where a request for model is keyed and scheduled: a LoRA
// adapter is served by replicas of its base model, so it is scheduled and
// looked up by the base model and keyed from the adapter's root.
func (pl *Planner) target(model string) (prompt.Target, *Error) {
	reps := pl.d.Replicas.ForModel(model)
	if len(reps) == 0 {
		return prompt.Target{}, &Error{Status: http.StatusNotFound, Message: fmt.Sprintf("The model `%s` does not exist.", model)}
	}
	// The engines' own block size, not the advertised one: keys cut at
	// another size match nothing (replicas.Set.KeyBlockSize).
	t := prompt.Target{Model: reps[0].Model, BlockSize: pl.d.Replicas.KeyBlockSize(reps[0].Model)}
	if t.Model != model {
		t.LoRA = model
	}
	return t, nil
}

// admitAndSchedule schedules p, waiting in the admission queue while
// every replica of its model is busy. It returns the time scheduling
// took and the time spent waiting.
func (pl *Planner) admitAndSchedule(ctx context.Context, p *Plan, band int) (sched, queued time.Duration, _ *Error) {
	var err error
	waitStart := time.Now()
	actx, span := tracing.Start(ctx, SpanAdmission, trace.SpanKindInternal)
	admitErr := pl.admit.Admit(actx, p.sreq.Model, band, func() bool {
		t0 := time.Now()
		p.decision, p.cands, err = pl.scheduleRoles(actx, p.Request.Model, p)
		sched = time.Since(t0)
		return !errors.Is(err, scheduler.ErrAllBusy)
	})
	queued = time.Since(waitStart) - sched
	if span.IsRecording() {
		traceAdmission(span, band, queued, admitErr)
	}
	span.End()
	switch {
	case admitErr != nil: // every replica busy, and no room or time to wait
		return sched, queued, busy(p.Request.Model, admitErr)
	case errors.Is(err, scheduler.ErrNoReplica):
		return sched, queued, &Error{Status: http.StatusServiceUnavailable, Message: "no healthy replica serves " + p.Request.Model}
	case err != nil:
		return sched, queued, &Error{Status: http.StatusInternalServerError, Message: "scheduling failed: " + err.Error()}
	}
	return sched, queued, nil
}

func (pl *Planner) observeOverhead(res prompt.Result, sched, total time.Duration) {
	o := pl.metrics.Overhead
	o.WithLabelValues("render").Observe(res.Render.Seconds())
	o.WithLabelValues("tokenize").Observe(res.Tokenize.Seconds())
	o.WithLabelValues("hash").Observe(res.Hash.Seconds())
	o.WithLabelValues("schedule").Observe(sched.Seconds())
	o.WithLabelValues("total").Observe(total.Seconds())
}
