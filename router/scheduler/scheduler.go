package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Errors Schedule returns; the router maps them to HTTP statuses.
var (
	// ErrNoReplica: no candidate serves the model or is healthy (503/404).
	ErrNoReplica = errors.New("no healthy replica serves the model")
	// ErrAllBusy: replicas exist but every one is over its busy threshold
	// (queue, then 429).
	ErrAllBusy = errors.New("every replica is over its busy threshold")
)

// WeightedScorer is a scorer with its weight in the total.
type WeightedScorer struct {
	Scorer
	Weight float64
}

// Scheduler runs filters, then weighted scorers, then the picker.
type Scheduler struct {
	filters []Filter
	scorers []WeightedScorer
	picker  Picker
	// replicator, when set, proposes a candidate to copy a hot prefix to
	// after each decision (Decision.Warm).
	replicator Replicator
	observers  []Observer
	names      []string  // scorer names, for Decision.Scorers
	weights    []float64 // scorer weights, for Decision.Weights
}

// New assembles a scheduler. Plugins that also implement Observer are told
// about each routed request.
func New(filters []Filter, scorers []WeightedScorer, picker Picker) (*Scheduler, error) {
	if picker == nil {
		return nil, errors.New("scheduler needs a picker")
	}
	s := &Scheduler{filters: filters, scorers: scorers, picker: picker}
	seen := map[Plugin]bool{}
	add := func(p Plugin) {
		if o, ok := p.(Observer); ok && !seen[p] {
			seen[p] = true
			s.observers = append(s.observers, o)
		}
	}
	for _, f := range filters {
		add(f)
	}
	for i, w := range scorers {
		if w.Weight < 0 {
			return nil, fmt.Errorf("scorer %s: negative weight %g", w.TypedName(), w.Weight)
		}
		if err := stateBefore(w.Scorer, scorers[i+1:]); err != nil {
			return nil, err
		}
		add(w.Scorer)
		s.names = append(s.names, w.TypedName().String())
		s.weights = append(s.weights, w.Weight)
	}
	add(picker)
	return s, nil
}

// Ranked is one candidate's place in a decision.
type Ranked struct {
	Candidate Candidate
	Total     float64
	// Scores are the unweighted scores, in the order of Decision.Scorers.
	Scores []float64
	// CachedBlocks is the predicted number of prompt blocks already cached.
	CachedBlocks int
	Mode         Mode
	// Rank is the data-parallel rank of the candidate that holds the most
	// of the prompt, for the request to be pinned to.
	Rank RankHit
}

// Decision is the outcome of scheduling one request.
type Decision struct {
	// Chosen is the picker's choice; Fallbacks the others, best first, for
	// retries on connect failure or overload (at most Request.Fallbacks of
	// them when that is set).
	Chosen    Ranked
	Fallbacks []Ranked
	// Scorers names the scorers, in the order of Ranked.Scores.
	Scorers []string
	// Weights are the scorers' weights, in the same order: Weights[i] *
	// Scores[i] is scorer i's part of a candidate's Total, which is what
	// a trace shows of the winning score.
	Weights []float64
	// Filtered counts candidates removed by each filter.
	Filtered map[string]int
	// Warm, when not nil, is a candidate the replicator proposes to send
	// the prompt's prefill alone (Replicator), never Chosen. It lives in
	// the request's scratch memory, as Fallbacks do.
	Warm *Ranked
}

// Score returns r's unweighted score from the named scorer (0 if absent).
func (d Decision) Score(r Ranked, scorer string) float64 {
	for i, n := range d.Scorers {
		if n == scorer && i < len(r.Scores) {
			return r.Scores[i]
		}
	}
	return 0
}

// CachedTokens is the predicted number of prompt tokens cached on the chosen
// replica.
func (d Decision) CachedTokens(req *Request) int {
	return d.Chosen.CachedBlocks * req.BlockTokens
}

// Schedule chooses a replica for req among cands. cands is not modified.
//
// Schedule works in scratch memory kept in req, and the Decision's
// Fallbacks, Scores and Filtered live there: they stay valid until req is
// scheduled again. A caller that reuses one Request per request schedules
// without allocating.
func (s *Scheduler) Schedule(ctx context.Context, req *Request, cands []Candidate) (Decision, error) {
	var d Decision
	if len(cands) == 0 {
		return d, ErrNoReplica
	}
	live, err := s.filter(ctx, req, cands, &d)
	if err != nil {
		return d, err
	}
	totals, per := s.score(ctx, req, live)
	pick := s.picker.Pick(ctx, req, live, totals)
	if pick < 0 || pick >= len(live) {
		return d, fmt.Errorf("picker %s chose %d of %d candidates", s.picker.TypedName(), pick, len(live))
	}
	d.Scorers, d.Weights = s.names, s.weights
	d.Chosen, d.Fallbacks = s.rank(req, live, totals, per, pick)
	if s.replicator != nil {
		if j := s.replicator.Replicate(ctx, req, live, pick); j >= 0 && j < len(live) && j != pick {
			req.cycle.warm = s.ranked(req, live, totals, per, j)
			d.Warm = &req.cycle.warm
		}
	}
	return d, nil
}

// WithReplicator adds r as s's replicator (Decision.Warm), and as an
// observer when it is one. It must be called before s schedules.
func (s *Scheduler) WithReplicator(r Replicator) *Scheduler {
	s.replicator = r
	if o, ok := r.(Observer); ok && !slices.ContainsFunc(s.observers, func(x Observer) bool { return Plugin(x) == Plugin(o) }) {
		s.observers = append(s.observers, o)
	}
	return s
}

// Warming tells the observers that req's prefill is being sent to target
// alone, to copy its prefix there (Decision.Warm): the prefix scorers
// credit target with the prompt as for a routed request, so the next
// decisions see it coming. The request's session is not moved there: the
// session's next turn belongs where its answer came from.
func (s *Scheduler) Warming(req *Request, target *Candidate) {
	session := req.SessionID
	req.SessionID = ""
	s.RoutedRank(req, target, -1)
	req.SessionID = session
}

// filter runs the filters over a copy of cands in req's scratch memory,
// counting in d.Filtered what each removed, and returns the survivors:
// ErrAllBusy when the filter that removed the last one was a busy filter,
// ErrNoReplica when another was.
func (s *Scheduler) filter(ctx context.Context, req *Request, cands []Candidate, d *Decision) ([]Candidate, error) {
	c := &req.cycle
	live := append(c.live[:0], cands...)
	c.live = live
	clear(c.filtered)
	for _, f := range s.filters {
		before := len(live)
		live = f.Filter(ctx, req, live)
		if n := before - len(live); n > 0 {
			if c.filtered == nil {
				c.filtered = map[string]int{}
			}
			c.filtered[f.TypedName().String()] += n
			d.Filtered = c.filtered
		}
		if len(live) == 0 {
			if _, busy := f.(busyFilter); busy {
				return nil, ErrAllBusy
			}
			return nil, ErrNoReplica
		}
	}
	return live, nil
}

// score runs the scorers over live, returning each candidate's weighted
// total and the unweighted scores, clamped to [0, 1], in per[j*ns+i] for
// scorer i and candidate j (ns scorers), both in req's scratch memory.
func (s *Scheduler) score(ctx context.Context, req *Request, live []Candidate) (totals, per []float64) {
	c := &req.cycle
	req.resetCycle(len(live))
	ns := len(s.scorers)
	c.totals = resize(c.totals, len(live))
	c.per = resize(c.per, ns*len(live))
	c.scores = resize(c.scores, len(live))
	totals, per, scores := c.totals, c.per, c.scores
	for i, w := range s.scorers {
		clear(scores)
		w.Score(ctx, req, live, scores)
		for j, v := range scores {
			v = clamp01(v)
			per[j*ns+i] = v
			totals[j] += w.Weight * v
		}
	}
	return totals, per
}

// rank returns the picked candidate and the fallbacks: the rest by total,
// best first, ties in candidate order, at most req.Fallbacks of them when
// that is set, in req's scratch memory.
func (s *Scheduler) rank(req *Request, live []Candidate, totals, per []float64, pick int) (Ranked, []Ranked) {
	c := &req.cycle
	order := c.order[:0]
	for j := range live {
		if j != pick {
			order = append(order, j)
		}
	}
	if k := req.Fallbacks; k > 0 && k < len(order) {
		c.sortKeys = topOrder(order, totals, k, c.sortKeys)
		order = order[:k]
	} else {
		c.sortKeys = rankOrder(order, totals, c.sortKeys)
	}
	c.order = order
	c.ranked = resize(c.ranked, len(order)+1)
	ranked := c.ranked
	ranked[0] = s.ranked(req, live, totals, per, pick)
	for k, j := range order {
		ranked[k+1] = s.ranked(req, live, totals, per, j)
	}
	return ranked[0], ranked[1:]
}

// ranked is candidate j's place in the decision: its total, its
// unweighted scores (a window of per) and what was predicted for it.
func (s *Scheduler) ranked(req *Request, live []Candidate, totals, per []float64, j int) Ranked {
	ns := len(s.scorers)
	r := Ranked{Candidate: live[j], Total: totals[j], Scores: per[j*ns : (j+1)*ns : (j+1)*ns]}
	r.CachedBlocks, r.Mode, r.Rank = req.predicted(j)
	return r
}

// rankOrder sorts order (candidate positions, ascending) by total, best
// first, ties in position order, using keys as scratch and returning it.
// While every position fits in 6 bits (up to 64 candidates), each becomes
// one integer, its total's bits (totals are never negative, and
// non-negative floats order as their bits) with the position in the low 6
// bits: sorting integers is several times faster than sorting through a
// comparison func, and totals closer than about 1e-14 count as tied.
func rankOrder(order []int, totals []float64, keys []uint64) []uint64 {
	if len(totals) > 64 {
		slices.SortFunc(order, func(a, b int) int {
			if x := cmp.Compare(totals[b], totals[a]); x != 0 {
				return x
			}
			return cmp.Compare(a, b)
		})
		return keys
	}
	keys = keys[:0]
	for _, j := range order {
		keys = append(keys, ^math.Float64bits(totals[j])&^63|uint64(j))
	}
	slices.Sort(keys)
	for i, k := range keys {
		order[i] = int(k & 63)
	}
	return keys
}

// topOrder puts in order[:k] the first k positions rankOrder would sort
// to the front, in that order, using keys as scratch and returning it: a
// caller that needs three fallbacks of 63 candidates should not sort them
// all. Past 64 candidates it sorts.
func topOrder(order []int, totals []float64, k int, keys []uint64) []uint64 {
	if len(totals) > 64 {
		topOrderWide(order, totals, k)
		return keys
	}
	// The k smallest of rankOrder's integer keys, kept sorted by insertion.
	keys = keys[:0]
	for _, j := range order {
		key := ^math.Float64bits(totals[j])&^63 | uint64(j)
		if len(keys) == k && key >= keys[k-1] {
			continue
		}
		if len(keys) < k {
			keys = append(keys, key)
		} else {
			keys[k-1] = key
		}
		for i := len(keys) - 1; i > 0 && keys[i] < keys[i-1]; i-- {
			keys[i], keys[i-1] = keys[i-1], keys[i]
		}
	}
	for i, key := range keys {
		order[i] = int(key & 63)
	}
	return keys
}

// topOrderWide is topOrder past 64 candidates: the k best kept sorted by
// insertion, by total then position, so that a decision over a few
// hundred candidates does not sort them all for three fallbacks.
func topOrderWide(order []int, totals []float64, k int) {
	before := func(a, b int) bool { return totals[a] > totals[b] || totals[a] == totals[b] && a < b }
	n := 0
	for _, j := range order {
		if n == k && !before(j, order[k-1]) {
			continue
		}
		if n < k {
			n++
		}
		i := n - 1
		for ; i > 0 && before(j, order[i-1]); i-- {
			order[i] = order[i-1]
		}
		order[i] = j
	}
}

// Routed tells history-keeping plugins that req went to chosen.
func (s *Scheduler) Routed(req *Request, chosen *Candidate) {
	s.RoutedRank(req, chosen, -1)
}

// RoutedRank is Routed for a request pinned to chosen's data-parallel
// rank (-1: not pinned); observers that keep ranks (RankObserver) record
// it.
func (s *Scheduler) RoutedRank(req *Request, chosen *Candidate, rank int) {
	for _, o := range s.observers {
		if ro, ok := o.(RankObserver); ok {
			ro.RoutedRank(req, chosen, rank)
		} else {
			o.Routed(req, chosen)
		}
	}
}

// busyFilter marks filters whose rejection means overload, not absence.
type busyFilter interface{ busy() }

func clamp01(v float64) float64 {
	switch {
	case v != v || v < 0: // NaN or negative
		return 0
	case v > 1:
		return 1
	}
	return v
}
