package route

import (
	"sync"
	"time"

	"github.com/llmgw/llmgw/router/scheduler"
)

// decisionLogSize is how many routed requests the decision log keeps;
// maxLoggedScores how many scorers' scores each keeps (more are cut).
const (
	decisionLogSize = 50
	maxLoggedScores = 8
	// maxPredictedReplicas bounds the per-replica prediction tallies:
	// past it (replica ids churn with allocations) they start over.
	maxPredictedReplicas = 4096
)

// Decision is one routed request in the decision log: where it went and
// why, as the explain API would have shown it.
type Decision struct {
	At             time.Time
	Model, Replica string
	Mode           scheduler.Mode
	PromptTokens   int
	CachedTokens   int // predicted cached on the chosen replica
	Total          float64
	// Scorers and Scores: the chosen replica's unweighted scores.
	Scorers []string
	Scores  []float64
	// RunnerUp is the best other candidate ("" when none), Candidates how
	// many were ranked.
	RunnerUp      string
	RunnerUpTotal float64
	Candidates    int
	Overhead      time.Duration // the routing time (the "total" stage)
	// Prefill is the prefill replica of a disaggregated request ("" for
	// others), PrefillCachedTokens its predicted cached tokens.
	Prefill             string
	PrefillCachedTokens int
	// ContinuedFrom is, for the continuation of a stream whose replica
	// failed mid-answer, that replica ("" for other requests).
	ContinuedFrom string
}

// Predicted is what the router predicted for the requests it sent one
// replica: their prompt tokens and, of those, the tokens predicted cached.
type Predicted struct{ PromptTokens, CachedTokens uint64 }

// decisionLog keeps the last decisionLogSize decisions in a ring of fixed
// entries, so recording one allocates nothing on the request path.
type decisionLog struct {
	mu        sync.Mutex
	ring      [decisionLogSize]loggedDecision
	next, n   int
	predicted map[string]*Predicted
}

type loggedDecision struct {
	d      Decision
	scores [maxLoggedScores]float64
}

// record logs p's decision, served by a's replica.
func (l *decisionLog) record(p *Plan, a Attempt) {
	d := &p.decision
	runner, ranked := scheduler.Ranked{}, 1+len(d.Fallbacks)
	for i := range ranked {
		r := d.Chosen
		if i > 0 {
			r = d.Fallbacks[i-1]
		}
		if r.Candidate.ID != a.Replica && (runner.Candidate.ID == "" || r.Total > runner.Total) {
			runner = r
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e := &l.ring[l.next]
	e.d = Decision{
		At: time.Now(), Model: p.Request.Model, Replica: a.Replica, Mode: a.Mode,
		PromptTokens: p.PromptTokens, CachedTokens: a.CachedTokens, Total: a.ranked.Total, Scorers: d.Scorers,
		RunnerUp: runner.Candidate.ID, RunnerUpTotal: runner.Total, Candidates: ranked, Overhead: p.Overhead,
		ContinuedFrom: p.continuedFrom,
	}
	if pre := p.prefilled; pre != nil {
		e.d.Prefill, e.d.PrefillCachedTokens = pre.Replica, pre.CachedTokens
		l.tallyLocked(pre.Replica, p.PromptTokens, pre.CachedTokens)
	}
	k := copy(e.scores[:], a.ranked.Scores)
	e.d.Scores = e.scores[:k]
	if len(e.d.Scorers) > k {
		e.d.Scorers = e.d.Scorers[:k]
	}
	l.next = (l.next + 1) % decisionLogSize
	l.n = min(l.n+1, decisionLogSize)

	l.tallyLocked(a.Replica, p.PromptTokens, a.CachedTokens)
}

// tallyLocked adds a routed request's prediction to replica's tallies.
func (l *decisionLog) tallyLocked(replica string, promptTokens, cached int) {
	p := l.predicted[replica]
	if p == nil {
		if l.predicted == nil || len(l.predicted) >= maxPredictedReplicas {
			l.predicted = map[string]*Predicted{}
		}
		p = &Predicted{}
		l.predicted[replica] = p
	}
	p.PromptTokens += uint64(max(promptTokens, 0))
	p.CachedTokens += uint64(max(cached, 0))
}

// RecentDecisions returns the decision log, newest first: the last
// requests routed (served by a replica), with their reasons.
func (pl *Planner) RecentDecisions() []Decision {
	l := &pl.decisions
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Decision, 0, l.n)
	for i := range l.n {
		e := l.ring[(l.next-1-i+decisionLogSize)%decisionLogSize]
		d := e.d
		d.Scores = append([]float64(nil), d.Scores...)
		out = append(out, d)
	}
	return out
}

// PredictedFor returns the router's prediction tallies for a replica
// since the router started (zero when it routed nothing there).
func (pl *Planner) PredictedFor(replica string) Predicted {
	pl.decisions.mu.Lock()
	defer pl.decisions.mu.Unlock()
	if p := pl.decisions.predicted[replica]; p != nil {
		return *p
	}
	return Predicted{}
}
