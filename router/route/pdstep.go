package route

import (
	"errors"

	"github.com/llmgw/llmgw/router/replicas"
)

// The prefill step's outcomes, as the caller that runs it (the gateway's
// P/D transport) reports them. A plan with no prefill step counts its
// path with NoPrefillStep; one with a prefill step either hands over to
// the decode replicas (Prefilled) or falls back to the decode replica
// prefilling the prompt itself (PrefillFailed).

// PrefillAttempts are the prefill replicas to try, in order, and whether
// a prefill replica should compute the prompt at all (remote); when not,
// the decode replica (or an aggregated one) computes it itself.
func (p *Plan) PrefillAttempts() (attempts []Attempt, remote bool) {
	return p.pd.attempts, p.pd.remote
}

// NoPrefillStep counts the path of a request sent without a prefill step
// (on a model with prefill and decode replicas; nothing otherwise).
func (p *Plan) NoPrefillStep() {
	if p.pd.considered && !p.pd.remote {
		p.pl.metrics.PD.WithLabelValues(p.pd.path).Inc()
	}
}

// Prefilled tells the plan that a's prefill replica computed the prompt:
// it is credited with the prompt's prefix, and the decode step's
// attempts are returned, the decode replicas among the plan's attempts
// (an aggregated fallback would not know what to do with the transfer
// parameters), in disaggregated mode. The error says why the request
// cannot continue on them (every decode replica left the set); the
// caller then tries the next prefill replica.
func (p *Plan) Prefilled(a Attempt) ([]Attempt, error) {
	p.pl.d.PrefillScheduler.RoutedRank(&p.pd.sreq, &a.ranked.Candidate, a.pinned())
	decode := make([]Attempt, 0, len(p.Attempts))
	for _, d := range p.Attempts {
		if p.pl.d.Replicas.RoleOf(d.Replica) == replicas.RoleDecode {
			d.Mode = ModeDisaggregated
			decode = append(decode, d)
		}
	}
	if len(decode) == 0 {
		return nil, errors.New("the decode replica left the set")
	}
	p.prefilled = &a
	p.pl.metrics.PD.WithLabelValues(PDRemote).Inc()
	return decode, nil
}

// PrefillFailed counts a request whose every prefill attempt failed: the
// decode replica prefills the prompt itself, on the plan's attempts.
func (p *Plan) PrefillFailed() { p.pl.metrics.PD.WithLabelValues(PDPrefillFailed).Inc() }
