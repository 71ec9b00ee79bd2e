package route

import (
	"github.com/llmgw/llmgw/router/openai"
)

// Warm is the replica the scheduler's replicator proposes to copy the
// prompt's shared prefix to (scheduler.Replicator, Decision.Warm), and
// the engine path to send its prefill to; ok is false when there is none
// to send. The caller sends the prompt there with one output token
// (WarmBody), beside the request itself, and tells the plan with
// Warming before anything else schedules.
//
// Only plain chat and completion requests are copied: a Responses or
// Messages request reaches the engine through an endpoint whose
// rendering the router's keys may not mirror, a disaggregated request's
// prefill has a replica of its own, and a pooling request caches nothing
// another request reuses.
func (p *Plan) Warm() (a Attempt, path string, ok bool) {
	w := p.decision.Warm
	if w == nil || p.utility || p.pd.considered || p.continuedFrom != "" || p.Request == nil || p.Request.Forward != nil {
		return Attempt{}, "", false
	}
	switch p.Request.Kind {
	case openai.Chat:
		path = "/v1/chat/completions"
	case openai.Completion:
		path = "/v1/completions"
	default:
		return Attempt{}, "", false
	}
	rep, found := p.pl.d.Replicas.Get(w.Candidate.ID)
	if !found {
		return Attempt{}, "", false // left the set since the decision
	}
	return Attempt{Replica: w.Candidate.ID, Model: w.Candidate.Model, Address: rep.Address, Mode: w.Mode,
		CachedTokens: w.CachedBlocks * p.BlockTokens, ranked: *w}, path, true
}

// Warming tells the planner that a's replica is being sent the prompt's
// prefill to copy its prefix (Warm): the prefix scorer credits it with
// the prompt as it does a routed request, so that the decisions made
// while it computes see the copy coming, and the request's session stays
// where the request went.
func (p *Plan) Warming(a Attempt) {
	p.pl.d.Scheduler.Warming(&p.sreq, &a.ranked.Candidate)
}
