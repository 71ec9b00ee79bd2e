package route

import (
	"context"
	"errors"

	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// schedule decides req over model's candidates, appended to cands: a
// large fleet's narrowed list (the prompt's holders and a sample,
// replicas.Set.AppendCandidatesFor) first, and every replica when no
// candidate of that list passes the filters (all busy, unhealthy or
// draining), so narrowing never turns a request away that another
// replica could take. It returns the candidates the decision was made
// over (its Ranked entries point into them). keep, when not nil, leaves
// out the replicas that do not serve the request's endpoint (taskFilter).
func schedule(ctx context.Context, set *replicas.Set, s *scheduler.Scheduler, model string, req *scheduler.Request, cands []scheduler.Candidate, keep func(string) bool) (scheduler.Decision, []scheduler.Candidate, error) {
	cands = keepServing(set.AppendCandidatesFor(cands, model, req), keep)
	d, err := s.Schedule(ctx, req, cands)
	if errors.Is(err, scheduler.ErrAllBusy) || errors.Is(err, scheduler.ErrNoReplica) {
		if all := keepServing(set.AppendCandidates(cands[len(cands):], model), keep); len(all) > len(cands) {
			cands = append(cands[:0], all...)
			d, err = s.Schedule(ctx, req, cands)
		}
	}
	return d, cands, err
}
