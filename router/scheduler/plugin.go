package scheduler

import "context"

// TypedName identifies a plugin instance: Type is the registered kind
// ("prefix", "load", ...), Name this instance's name in the config.
type TypedName struct {
	Type, Name string
}

func (t TypedName) String() string {
	if t.Name == "" || t.Name == t.Type {
		return t.Type
	}
	return t.Type + "/" + t.Name
}

// Plugin is what every scheduler plugin is.
type Plugin interface {
	TypedName() TypedName
}

// Filter drops candidates that must not serve the request. It returns the
// survivors (it may reuse the input's backing array) and must not reorder
// them.
type Filter interface {
	Plugin
	Filter(ctx context.Context, req *Request, cands []Candidate) []Candidate
}

// Scorer rates every candidate in [0, 1], higher is better, writing
// scores[i] for cands[i]. Scores are relative within one request; weights
// are applied by the scheduler, not by scorers.
type Scorer interface {
	Plugin
	Score(ctx context.Context, req *Request, cands []Candidate, scores []float64)
}

// Picker chooses one candidate given the weighted total scores, returning
// its position in cands.
type Picker interface {
	Plugin
	Pick(ctx context.Context, req *Request, cands []Candidate, totals []float64) int
}

// Observer learns from routing: Routed is called as the router sends the
// request to chosen, before chosen answers (once per attempt when a
// failed attempt is retried on the next candidate), so history-keeping
// plugins record what went where in time for the requests decided while
// this one is prefilled. It must be safe for concurrent use.
type Observer interface {
	Plugin
	Routed(req *Request, chosen *Candidate)
}

// RankObserver is an Observer that also learns the data-parallel rank of
// chosen the request is pinned to, so that what it credits names the
// rank as well as the replica (the prefix scorer's speculative credit).
type RankObserver interface {
	Observer
	RoutedRank(req *Request, chosen *Candidate, rank int)
}
