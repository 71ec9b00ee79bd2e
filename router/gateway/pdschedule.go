package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// ModeDisaggregated is the routing mode of a request served in two steps,
// prefill on one replica and decode on another, in the routing-mode
// metric, the decision log and the X-Llmgw-Routing-Mode header.
const ModeDisaggregated scheduler.Mode = "disaggregated"

// HeaderPrefillReplica names the prefill replica of a disaggregated
// request (sent only with Deps.ExposeRouteHeaders, as the other route
// headers).
const HeaderPrefillReplica = "X-Llmgw-Prefill-Replica"

// Why a request to a disaggregated model was or was not prefilled on a
// prefill replica: the path label of llmgw_pd_requests_total and the
// explain API's "path".
const (
	pdRemote        = "remote_prefill"
	pdCached        = "decode_cached"      // the decode replica caches enough of the prompt
	pdAggregated    = "aggregated_replica" // an aggregated replica won the decode step
	pdNoRole        = "role_unavailable"   // no usable prefill or decode replica: every replica serves whole requests
	pdNoPrefill     = "no_prefill_replica" // every prefill replica is busy or filtered out
	pdPrefillFailed = "prefill_failed"     // every prefill attempt failed: the decode replica prefilled itself
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
}

// reset forgets the last request, keeping the scratch memory.
func (pd *pdPlan) reset() {
	pd.considered, pd.remote, pd.path, pd.decodeCached, pd.required = false, false, "", 0, 0
	pd.decision = scheduler.Decision{}
	pd.sreq.Reset(scheduler.Request{})
	clear(pd.cands)
	pd.cands = pd.cands[:0]
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
func (g *Gateway) scheduleRoles(ctx context.Context, model string, p *plan) (scheduler.Decision, []scheduler.Candidate, error) {
	pd := &p.pd
	pd.reset()
	set := g.d.Replicas
	if !set.Disaggregated(model) {
		return schedule(ctx, set, g.d.Scheduler, model, &p.sreq, p.cands[:0])
	}
	cands := set.AppendCandidatesFor(p.cands[:0], model, &p.sreq)
	d, serving, err := g.scheduleRolesOver(ctx, p, cands)
	narrowedWorse := pd.path == pdNoRole || pd.path == pdNoPrefill || errors.Is(err, scheduler.ErrAllBusy) || errors.Is(err, scheduler.ErrNoReplica)
	if narrowedWorse {
		if all := set.AppendCandidates(cands[len(cands):], model); len(all) > len(cands) {
			pd.reset()
			d, serving, err = g.scheduleRolesOver(ctx, p, append(cands[:0], all...))
		}
	}
	return d, serving, err
}

// scheduleRolesOver is scheduleRoles over the candidates all (reordered
// in place: the decode step's candidates first).
func (g *Gateway) scheduleRolesOver(ctx context.Context, p *plan, all []scheduler.Candidate) (scheduler.Decision, []scheduler.Candidate, error) {
	pd, set := &p.pd, g.d.Replicas
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
		pd.path = pdNoRole
		all = append(serving, prefill...)
		d, err := g.d.Scheduler.Schedule(ctx, &p.sreq, all)
		return d, all, err
	}
	d, err := g.d.Scheduler.Schedule(ctx, &p.sreq, serving)
	if err != nil {
		return d, serving, err
	}
	if set.RoleOf(d.Chosen.Candidate.ID) != replicas.RoleDecode {
		pd.path = pdAggregated
		return d, serving, nil
	}
	pd.decodeCached = d.Chosen.CachedBlocks * p.sreq.BlockTokens
	pd.required = g.d.PD.Required(p.sreq.PromptTokens)
	if g.d.PD.SkipRemotePrefill(p.sreq.PromptTokens, pd.decodeCached) {
		pd.path = pdCached
		return d, serving, nil
	}
	pd.sreq.Reset(scheduler.Request{Model: p.sreq.Model, Keys: p.sreq.Keys, ApproxKeys: p.sreq.ApproxKeys, BlockTokens: p.sreq.BlockTokens,
		PromptTokens: p.sreq.PromptTokens, SessionID: p.sreq.SessionID, Fallbacks: p.sreq.Fallbacks})
	pdd, err := g.prefillScheduler().Schedule(ctx, &pd.sreq, prefill)
	if err != nil {
		pd.path = pdNoPrefill
		return d, serving, nil
	}
	pd.decision, pd.remote, pd.path = pdd, true, pdRemote
	return d, serving, nil
}

// prefillScheduler schedules the prefill step: Deps.PrefillScheduler, or
// the scheduler of every request when none is configured.
func (g *Gateway) prefillScheduler() *scheduler.Scheduler {
	if g.d.PrefillScheduler != nil {
		return g.d.PrefillScheduler
	}
	return g.d.Scheduler
}

// pdReason explains a path in words, for the explain API.
func (pd *pdPlan) reason(promptTokens int) string {
	switch pd.path {
	case pdRemote:
		return fmt.Sprintf("the decode replica caches %d of %d prompt tokens, under the threshold of %d: prefill on a prefill replica", pd.decodeCached, promptTokens, pd.required)
	case pdCached:
		return fmt.Sprintf("the decode replica caches %d of %d prompt tokens, at least the threshold of %d: it prefills the rest itself", pd.decodeCached, promptTokens, pd.required)
	case pdAggregated:
		return "an aggregated replica won the decode step: it serves the whole request"
	case pdNoRole:
		return "the model has no usable prefill replica or no usable decode replica: every replica serves whole requests"
	case pdNoPrefill:
		return "no prefill replica can take the request now: the decode replica prefills it itself"
	}
	return ""
}

// newPDMetric counts the requests to disaggregated models by their path.
func newPDMetric() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmgw_pd_requests_total",
		Help: "Requests to models with prefill and decode replicas by path: remote_prefill, decode_cached, aggregated_replica, role_unavailable, no_prefill_replica, prefill_failed.",
	}, []string{"path"})
}

// explainedPD is the explain API's account of a disaggregated model's
// request: the path it takes and why, the decode replica's cached tokens
// against the threshold, and the prefill step's candidates ("ranked", the
// chosen one first) when a prefill replica computes the prompt. The
// decode step's choice is the explanation's "chosen".
type explainedPD struct {
	Path         string      `json:"path"`
	Reason       string      `json:"reason"`
	DecodeCached int         `json:"decode_cached_tokens"`
	Threshold    int         `json:"threshold_tokens"`
	Prefill      *explained  `json:"prefill,omitempty"`
	Ranked       []explained `json:"prefill_ranked,omitempty"`
}

func (g *Gateway) explainPD(p *plan) explainedPD {
	pd := &p.pd
	out := explainedPD{Path: pd.path, Reason: pd.reason(p.prompt.Tokens), DecodeCached: pd.decodeCached, Threshold: pd.required}
	if !pd.remote {
		return out
	}
	d := pd.decision
	for _, r := range append([]scheduler.Ranked{d.Chosen}, d.Fallbacks...) {
		e := explained{Replica: r.Candidate.ID, Mode: r.Mode, Total: r.Total, Scores: map[string]float64{}, CachedTokens: r.CachedBlocks * p.sreq.BlockTokens}
		for i, name := range d.Scorers {
			e.Scores[name] = r.Scores[i]
		}
		out.Ranked = append(out.Ranked, e)
	}
	out.Prefill = &out.Ranked[0]
	return out
}
