package route

import (
	"context"
	"errors"
	"fmt"

	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// Why a request to a disaggregated model was or was not prefilled on a
// prefill replica: the path label of llmgw_pd_requests_total and the
// explain API's "path".
const (
	PDRemote        = "remote_prefill"          // a prefill replica computes the prompt
	PDCached        = "decode_cached"           // the decode replica caches enough of the prompt
	PDAggregated    = "aggregated_replica"      // an aggregated replica won the decode step
	PDNoRole        = "role_unavailable"        // no usable prefill or decode replica: every replica serves whole requests
	PDNoPrefill     = "no_prefill_replica"      // every prefill replica is busy or filtered out
	PDPrefillFailed = "prefill_failed"          // every prefill attempt failed: the decode replica prefilled itself
	PDOtherAPI      = "api_without_kv_transfer" // a Responses or Messages request, which cannot carry kv_transfer_params: the decode replica prefills it
)

// pdPlan is the disaggregated part of a plan: the prefill step's own
// scheduling request and decision, kept apart from the decode step's (a
// Decision lives in its Request's scratch memory), and why the request
// takes the path it takes.
type pdPlan struct {
	considered bool // the model has replicas of both roles
	remote     bool // run the prefill step
	path       string
	// decodeCached and required: the decode replica's predicted cached
	// tokens (every tier in full) and the threshold's count for the prompt.
	decodeCached, required int

	sreq     scheduler.Request
	cands    []scheduler.Candidate // the prefill replicas
	decision scheduler.Decision    // the prefill replica, when remote
	roles    []replicas.Role
	attempts []Attempt // the prefill replicas to try, when remote
}

// reset forgets the last request, keeping the scratch memory.
func (pd *pdPlan) reset() {
	pd.considered, pd.remote, pd.path, pd.decodeCached, pd.required = false, false, "", 0, 0
	pd.decision = scheduler.Decision{}
	pd.sreq.Reset(scheduler.Request{})
	clear(pd.cands)
	pd.cands = pd.cands[:0]
	clear(pd.attempts)
	pd.attempts = pd.attempts[:0]
}

// usable reports whether a candidate can take a request at all (its
// breaker closed, not draining); busy replicas are usable, the
// scheduler's filters and the admission queue deal with them.
func usable(c *scheduler.Candidate) bool { return c.Healthy && !c.Draining }

// scheduleRoles decides where p's request goes. A model whose replicas
// are all of one role is scheduled as ever. A model with prefill and
// decode replicas is scheduled in two steps, by this rule:
//
//   - while it has no usable prefill replica or no usable decode
//     replica, every replica serves whole requests (aggregated);
//   - otherwise the decode step is scheduled over the decode and the
//     aggregated replicas (by the same scorers as any request: prefix
//     cache and load); an aggregated winner serves the request whole;
//   - a decode winner that caches enough of the prompt (the threshold, on
//     cached token counts) prefills it itself;
//   - otherwise the prefill step is scheduled over the prefill replicas
//     by the prefill scheduler (prefix cache and prefill load); when none
//     can take it, the decode replica prefills the prompt itself.
//
// A large fleet is narrowed as in the aggregated path (schedule): both
// steps are decided over the prompt's holders and a sample, and over
// every replica when the narrowed list leads to a worse path than the
// whole fleet might (no usable replica of a role, every one busy, or no
// prefill replica free), so narrowing never costs a request its prefill.
func (pl *Planner) scheduleRoles(ctx context.Context, model string, p *Plan) (scheduler.Decision, []scheduler.Candidate, error) {
	pd := &p.pd
	pd.reset()
	set := pl.d.Replicas
	if !set.Disaggregated(model) {
		return schedule(ctx, set, pl.d.Scheduler, model, &p.sreq, p.cands[:0], p.keep)
	}
	cands := keepServing(set.AppendCandidatesFor(p.cands[:0], model, &p.sreq), p.keep)
	d, serving, err := pl.scheduleRolesOver(ctx, p, cands)
	narrowedWorse := pd.path == PDNoRole || pd.path == PDNoPrefill || errors.Is(err, scheduler.ErrAllBusy) || errors.Is(err, scheduler.ErrNoReplica)
	if narrowedWorse {
		if all := keepServing(set.AppendCandidates(cands[len(cands):], model), p.keep); len(all) > len(cands) {
			pd.reset()
			d, serving, err = pl.scheduleRolesOver(ctx, p, append(cands[:0], all...))
		}
	}
	return d, serving, err
}

// scheduleRolesOver is scheduleRoles over the candidates all (reordered
// in place: the decode step's candidates first).
func (pl *Planner) scheduleRolesOver(ctx context.Context, p *Plan, all []scheduler.Candidate) (scheduler.Decision, []scheduler.Candidate, error) {
	pd, set := &p.pd, pl.d.Replicas
	pd.considered = true
	pd.roles = set.RolesOf(pd.roles[:0], func(i int) string { return all[i].ID }, len(all))
	serving, prefill, decodeOK, prefillOK := all[:0], pd.cands[:0], false, false
	for i := range all {
		c := all[i]
		switch pd.roles[i] {
		case replicas.RolePrefill:
			prefill = append(prefill, c)
			prefillOK = prefillOK || usable(&c)
			continue
		case replicas.RoleDecode:
			decodeOK = decodeOK || usable(&c)
		}
		serving = append(serving, c) // in place: serving never passes i
	}
	pd.cands = prefill
	if !decodeOK || !prefillOK {
		pd.path = PDNoRole
		all = append(serving, prefill...)
		d, err := pl.d.Scheduler.Schedule(ctx, &p.sreq, all)
		return d, all, err
	}
	d, err := pl.d.Scheduler.Schedule(ctx, &p.sreq, serving)
	if err != nil {
		return d, serving, err
	}
	if set.RoleOf(d.Chosen.Candidate.ID) != replicas.RoleDecode {
		pd.path = PDAggregated
		return d, serving, nil
	}
	pd.decodeCached = d.Chosen.CachedBlocks * p.sreq.BlockTokens
	pd.required = pl.d.Options.PD.Required(p.sreq.PromptTokens)
	if p.Request != nil && p.Request.Forward != nil {
		pd.path = PDOtherAPI
		return d, serving, nil
	}
	if pl.d.Options.PD.SkipRemotePrefill(p.sreq.PromptTokens, pd.decodeCached) {
		pd.path = PDCached
		return d, serving, nil
	}
	pd.sreq.Reset(scheduler.Request{Model: p.sreq.Model, Keys: p.sreq.Keys, ApproxKeys: p.sreq.ApproxKeys, BlockTokens: p.sreq.BlockTokens,
		PromptTokens: p.sreq.PromptTokens, SessionID: p.sreq.SessionID, Fallbacks: p.sreq.Fallbacks})
	pdd, err := pl.d.PrefillScheduler.Schedule(ctx, &pd.sreq, prefill)
	if err != nil {
		pd.path = PDNoPrefill
		return d, serving, nil
	}
	pd.decision, pd.remote, pd.path = pdd, true, PDRemote
	return d, serving, nil
}

// pdReason explains a path in words, for the explain API.
func (pd *pdPlan) reason(promptTokens int) string {
	switch pd.path {
	case PDRemote:
		return fmt.Sprintf("the decode replica caches %d of %d prompt tokens, under the threshold of %d: prefill on a prefill replica", pd.decodeCached, promptTokens, pd.required)
	case PDCached:
		return fmt.Sprintf("the decode replica caches %d of %d prompt tokens, at least the threshold of %d: it prefills the rest itself", pd.decodeCached, promptTokens, pd.required)
	case PDAggregated:
		return "an aggregated replica won the decode step: it serves the whole request"
	case PDNoRole:
		return "the model has no usable prefill replica or no usable decode replica: every replica serves whole requests"
	case PDNoPrefill:
		return "no prefill replica can take the request now: the decode replica prefills it itself"
	}
	return ""
}

// ExplainedPD is the explain API's account of a disaggregated model's
// request: the path it takes and why, the decode replica's cached tokens
// against the threshold, and the prefill step's candidates ("ranked", the
// chosen one first) when a prefill replica computes the prompt. The
// decode step's choice is the explanation's "chosen".
type ExplainedPD struct {
	Path         string      `json:"path"`
	Reason       string      `json:"reason"`
	DecodeCached int         `json:"decode_cached_tokens"`
	Threshold    int         `json:"threshold_tokens"`
	Prefill      *Explained  `json:"prefill,omitempty"`
	Ranked       []Explained `json:"prefill_ranked,omitempty"`
}

func explainPD(p *Plan) ExplainedPD {
	pd := &p.pd
	out := ExplainedPD{Path: pd.path, Reason: pd.reason(p.PromptTokens), DecodeCached: pd.decodeCached, Threshold: pd.required}
	if !pd.remote {
		return out
	}
	d := &pd.decision
	for _, r := range ranked(d) {
		out.Ranked = append(out.Ranked, explain(d, r, p.BlockTokens))
	}
	out.Prefill = &out.Ranked[0]
	return out
}
