package scheduler

import (
	"context"
	"fmt"
	"time"
)

// ApproxParams tune the approximate prefix scorer.
type ApproxParams struct {
	// TTL is how long a routed prompt is assumed to stay cached (Dynamo's
	// approximate mode uses 120 s).
	TTL Duration `json:"ttl"`
	// MaxEntries caps the remembered (block, replica) pairs.
	MaxEntries int `json:"max_entries"`
	// IgnoreEvents scores every candidate from routing history, even those
	// whose KV events flow: approximate routing alone, for comparisons.
	IgnoreEvents bool `json:"ignore_events"`
}

func defaultApproxParams() ApproxParams {
	return ApproxParams{TTL: Duration(120 * time.Second), MaxEntries: 1 << 20}
}

func (p *ApproxParams) validate() error {
	if p.TTL <= 0 {
		return fmt.Errorf("ttl must be positive")
	}
	if p.MaxEntries <= 0 {
		return fmt.Errorf("max_entries must be positive")
	}
	return nil
}

// ApproxScorer is tier 1 routing for replicas without KV events: it predicts
// a replica's cache from what this router sent it within TTL, scoring the
// share of the prompt's leading blocks sent there. It applies to approx-mode
// candidates, and to every candidate while the request has no canonical keys
// (the model's tokenizer is unavailable and blocks are text chunks).
type ApproxScorer struct {
	name TypedName
	hist *History
	all  bool // IgnoreEvents
	// hybrid, when set, says which replicas keep Mamba state: history
	// credits them only where a sent prompt ended, as the engine would.
	hybrid HybridIndex
}

func newApproxScorer(name TypedName, p ApproxParams, now func() time.Time, ix PrefixIndex) *ApproxScorer {
	hy, _ := ix.(HybridIndex)
	return &ApproxScorer{name: name, hist: NewHistory(time.Duration(p.TTL), p.MaxEntries, now), all: p.IgnoreEvents, hybrid: hy}
}

func (s *ApproxScorer) TypedName() TypedName { return s.name }

func (s *ApproxScorer) applies(req *Request, c *Candidate) bool {
	return s.all || c.Mode == ModeApprox || c.Mode == ModeExact && req.Keys == nil
}

func (s *ApproxScorer) Score(_ context.Context, req *Request, cands []Candidate, scores []float64) {
	keys := req.HistoryKeys()
	if len(keys) == 0 {
		return
	}
	var depth map[string]int
	s.hist.Match(keys, func(replica string, d int) {
		if depth == nil {
			depth = map[string]int{}
		}
		depth[replica] = d
	})
	for i := range cands {
		c := &cands[i]
		if !s.applies(req, c) {
			continue
		}
		d := depth[c.ID]
		if d > 0 && s.hybrid != nil && s.hybrid.EndStateOnly(c.ID) {
			limit := len(keys)
			if req.Keys != nil {
				limit = maxHit(req)
			}
			d = endStateCredit(s.hist, keys, c.ID, d, limit)
		}
		scores[i] = float64(d) / float64(len(keys))
		NotePrediction(req, i, Prediction{Blocks: d, Credit: float64(d), Mode: ModeApprox})
	}
}

// Routed remembers that the prompt's blocks went to chosen.
func (s *ApproxScorer) Routed(req *Request, chosen *Candidate) {
	if s.applies(req, chosen) {
		s.hist.Record(req.HistoryKeys(), chosen.ID)
		if s.hybrid != nil && s.hybrid.EndStateOnly(chosen.ID) {
			recordEnd(s.hist, req.HistoryKeys(), chosen.ID)
		}
	}
}

var (
	_ Scorer   = (*ApproxScorer)(nil)
	_ Observer = (*ApproxScorer)(nil)
)
