package gateway

import (
	"context"
	"errors"
	"slices"

	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
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
func (g *Gateway) scheduleContinuation(ctx context.Context, model string, sreq *scheduler.Request, failed []string) (scheduler.Decision, error) {
	set := g.d.Replicas
	if !set.Disaggregated(model) {
		d, _, err := schedule(ctx, set, g.d.Scheduler, model, sreq, nil)
		return d, err
	}
	serving, _ := g.continuationLists(model, sreq, failed, true)
	d, err := g.d.Scheduler.Schedule(ctx, sreq, serving)
	if !errors.Is(err, scheduler.ErrAllBusy) && !errors.Is(err, scheduler.ErrNoReplica) {
		return d, err
	}
	serving, prefill := g.continuationLists(model, sreq, failed, false)
	d, err = g.d.Scheduler.Schedule(ctx, sreq, serving)
	if errors.Is(err, scheduler.ErrAllBusy) || errors.Is(err, scheduler.ErrNoReplica) {
		d, err = g.d.Scheduler.Schedule(ctx, sreq, prefill)
	}
	return d, err
}

// continuationLists splits model's candidates, the failed ones left out,
// into those that serve a continuation (decode and aggregated replicas)
// and the prefill replicas; narrowed: the prompt's holders and a sample
// only, on a fleet large enough to be narrowed.
func (g *Gateway) continuationLists(model string, sreq *scheduler.Request, failed []string, narrowed bool) (serving, prefill []scheduler.Candidate) {
	set := g.d.Replicas
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
