package gateway

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

func (l *decisionLog) record(model string, d *scheduler.Decision, chosen scheduler.Ranked, promptTokens, blockTokens int, overhead time.Duration, pre *prefilled) {
	l.recordFrom(model, d, chosen, promptTokens, blockTokens, overhead, pre, "")
}

// recordFrom records a decision; from is the failed replica whose stream
// it continues, "" for a request of the client's.
func (l *decisionLog) recordFrom(model string, d *scheduler.Decision, chosen scheduler.Ranked, promptTokens, blockTokens int, overhead time.Duration, pre *prefilled, from string) {
	runner, ranked := scheduler.Ranked{}, 1+len(d.Fallbacks)
	for i := range ranked {
		r := d.Chosen
		if i > 0 {
			r = d.Fallbacks[i-1]
		}
		if r.Candidate.ID != chosen.Candidate.ID && (runner.Candidate.ID == "" || r.Total > runner.Total) {
			runner = r
		}
	}
	cached := chosen.CachedBlocks * blockTokens
	l.mu.Lock()
	defer l.mu.Unlock()
	e := &l.ring[l.next]
	e.d = Decision{
		At: time.Now(), Model: model, Replica: chosen.Candidate.ID, Mode: chosen.Mode,
		PromptTokens: promptTokens, CachedTokens: cached, Total: chosen.Total, Scorers: d.Scorers,
		RunnerUp: runner.Candidate.ID, RunnerUpTotal: runner.Total, Candidates: ranked, Overhead: overhead,
		ContinuedFrom: from,
	}
	if pre != nil {
		e.d.Prefill, e.d.PrefillCachedTokens = pre.ranked.Candidate.ID, pre.ranked.CachedBlocks*blockTokens
		l.tallyLocked(pre.ranked.Candidate.ID, promptTokens, e.d.PrefillCachedTokens)
	}
	k := copy(e.scores[:], chosen.Scores)
	e.d.Scores = e.scores[:k]
	if len(e.d.Scorers) > k {
		e.d.Scorers = e.d.Scorers[:k]
	}
	l.next = (l.next + 1) % decisionLogSize
	l.n = min(l.n+1, decisionLogSize)

	l.tallyLocked(chosen.Candidate.ID, promptTokens, cached)
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
func (g *Gateway) RecentDecisions() []Decision {
	l := &g.decisions
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
func (g *Gateway) PredictedFor(replica string) Predicted {
	g.decisions.mu.Lock()
	defer g.decisions.mu.Unlock()
	if p := g.decisions.predicted[replica]; p != nil {
		return *p
	}
	return Predicted{}
}

// QueueDepth is how many requests wait in the admission queue now, and
// the queue's bound.
func (g *Gateway) QueueDepth() (waiting, max int) { return g.admit.Waiting(), g.d.MaxQueue }
