package route

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/tenant"
)

// scheduleContinuation ranks the replicas that may take a migrated
// stream's continuation, the failed ones left out. A model whose replicas
// are all of one role is scheduled as any request. On a model with
// prefill and decode replicas the continuation is a decode: it is
// scheduled over the decode and aggregated replicas, as the decode step
// is, and is never sent kv_transfer_params (migrate.Plan.Continue drops
// them). The prefill replicas take it only when none of those can (none
// left, none healthy, or all busy), as they serve whole requests when a
// model has no usable decode replica: a stream that ends on a replica
// sized for prompts beats a stream that ends with an error. A large
// fleet is narrowed as any request is (replicas.Set.AppendCandidatesFor):
// the continuation is decided over its prompt's holders and a sample
// first, and over every replica when none of those can take it.
func (pl *Planner) scheduleContinuation(ctx context.Context, model string, sreq *scheduler.Request, failed []string) (scheduler.Decision, error) {
	set := pl.d.Replicas
	if !set.Disaggregated(model) {
		d, _, err := schedule(ctx, set, pl.d.Scheduler, model, sreq, nil, nil)
		return d, err
	}
	serving, _ := pl.continuationLists(model, sreq, failed, true)
	d, err := pl.d.Scheduler.Schedule(ctx, sreq, serving)
	if !errors.Is(err, scheduler.ErrAllBusy) && !errors.Is(err, scheduler.ErrNoReplica) {
		return d, err
	}
	serving, prefill := pl.continuationLists(model, sreq, failed, false)
	d, err = pl.d.Scheduler.Schedule(ctx, sreq, serving)
	if errors.Is(err, scheduler.ErrAllBusy) || errors.Is(err, scheduler.ErrNoReplica) {
		d, err = pl.d.Scheduler.Schedule(ctx, sreq, prefill)
	}
	return d, err
}

// continuationLists splits model's candidates, the failed ones left out,
// into those that serve a continuation (decode and aggregated replicas)
// and the prefill replicas; narrowed: the prompt's holders and a sample
// only, on a fleet large enough to be narrowed.
func (pl *Planner) continuationLists(model string, sreq *scheduler.Request, failed []string, narrowed bool) (serving, prefill []scheduler.Candidate) {
	set := pl.d.Replicas
	var all []scheduler.Candidate
	if narrowed {
		all = set.AppendCandidatesFor(nil, model, sreq)
	} else {
		all = set.AppendCandidates(nil, model)
	}
	roles := set.RolesOf(nil, func(i int) string { return all[i].ID }, len(all))
	for i, c := range all {
		switch {
		case slices.Contains(failed, c.ID):
		case roles[i] == replicas.RolePrefill:
			prefill = append(prefill, c)
		default:
			serving = append(serving, c)
		}
	}
	return serving, prefill
}

// Reschedule plans the continuation of a stream whose replica failed
// mid-way (router/migrate builds its body): it is decided as any request
// of kind, minus the admission queue and the tenant's limits (the request
// was admitted and charged once), over the replicas not in failed, the
// last of which has its breaker told of the failure. On a disaggregated
// model the continuation is a decode (scheduleContinuation). The plan is
// the caller's for the stream's life: Release leaves it alone.
func (pl *Planner) Reschedule(ctx context.Context, kind openai.Kind, body []byte, session string, failed []string) (*Plan, error) {
	if len(failed) == 0 {
		return nil, errors.New("reschedule: no failed replica named")
	}
	last := failed[len(failed)-1]
	pl.d.Replicas.Failed(last) // its breaker counts the failure
	req, err := openai.Parse(kind, body)
	if err != nil {
		return nil, fmt.Errorf("continuation: %w", err)
	}
	t, e := pl.target(req.Model)
	if e != nil {
		return nil, fmt.Errorf("no replica serves %s", req.Model)
	}
	res, err := pl.d.Prompts.ComputeContext(ctx, req, t)
	if err != nil {
		return nil, fmt.Errorf("continuation prompt: %w", err)
	}
	p := &Plan{pl: pl, Request: req, continuedFrom: last}
	p.fill(res, scheduler.Request{Model: t.Model, SessionID: sessionKey(tenant.FromContext(ctx), session), Fallbacks: len(failed) + pl.d.Options.Attempts - 1 + fallbackSpare}, t.BlockSize)
	start := time.Now()
	p.decision, err = pl.scheduleContinuation(ctx, req.Model, &p.sreq, failed)
	p.Overhead = time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("schedule the continuation: %w", err)
	}
	p.Attempts = pl.attempts(nil, &p.decision, p.BlockTokens, failed)
	if len(p.Attempts) == 0 {
		return nil, fmt.Errorf("no healthy replica of %s but the failed %v", req.Model, failed)
	}
	return p, nil
}
