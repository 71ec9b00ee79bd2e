package scheduler

// Prediction is what a scorer predicts a candidate already caches of the
// prompt: the hand-off from the prefix scorers to the ttft scorer, and the
// cached blocks and mode every decision reports (Ranked.CachedBlocks,
// Ranked.Mode).
type Prediction struct {
	// Blocks is the number of the prompt's leading blocks (of
	// Request.BlockTokens tokens, or Request.ApproxKeys chunks) predicted
	// cached.
	Blocks int
	// Credit is the prefill those blocks save, in blocks: a block cached
	// only in CPU memory saves less than one on the GPU.
	Credit float64
	// Mode is how the prediction was made (ModeExact from KV events,
	// ModeApprox from routing history).
	Mode Mode
	// Rank is the candidate's data-parallel rank whose cache the
	// prediction rests on. A DP > 1 engine picks a rank by load unless
	// told one, so only a request pinned to it finds the blocks
	// predicted.
	Rank RankHit
}

// Predictions is the state key of the cached-block predictions. Producers
// (the prefix and approx-prefix scorers, or a plugin that knows a
// replica's cache some other way) call NotePrediction and list Predictions
// in WritesState; consumers (the ttft scorer) read Predictions.Get and
// list it in ReadsState, so New makes them come after every producer.
var Predictions = NewStateKey[Prediction]("cached-block predictions")

// NotePrediction merges p into candidate i's prediction in req: the most
// blocks, the most credit, the most exact mode and the rank holding the
// most blocks win, so several
// producers (precise and approximate) can each say what they know.
func NotePrediction(req *Request, i int, p Prediction) {
	c := &req.cycle
	if i < 0 || i >= c.n {
		return // scored outside Schedule
	}
	s := Predictions.slot(c) // one slot lookup for the read and the write
	if s.set[i] {
		old := s.v[i]
		p.Blocks = max(p.Blocks, old.Blocks)
		p.Credit = max(p.Credit, old.Credit)
		if old.Mode == ModeExact {
			p.Mode = ModeExact
		}
		if old.Rank.Blocks > p.Rank.Blocks {
			p.Rank = old.Rank
		}
	}
	s.v[i], s.set[i] = p, true
}

// creditOf is the prefill credit, in blocks, predicted for candidate i (0
// when no scorer predicted any).
func (r *Request) creditOf(i int) float64 {
	p, _ := Predictions.Get(r, i)
	return p.Credit
}

// predicted is candidate i's predicted cached blocks and routing mode
// (ModeLoad when nothing predicted any), and the rank they rest on.
func (r *Request) predicted(i int) (int, Mode, RankHit) {
	p, ok := Predictions.Get(r, i)
	if !ok || p.Mode == "" {
		return 0, ModeLoad, RankHit{}
	}
	return p.Blocks, p.Mode, p.Rank
}

// RankHit is the data-parallel rank a decision's prediction rests on:
// Blocks of the prompt's leading blocks are cached there, by the engine's
// KV events (0: no rank is known to hold any, and Rank means nothing).
type RankHit struct {
	Rank, Blocks int
}

// predictionWriters is the WritesState of the built-in producers.
var predictionWriters = []AnyStateKey{Predictions}

func (s *PrefixScorer) WritesState() []AnyStateKey { return predictionWriters }
func (s *ApproxScorer) WritesState() []AnyStateKey { return predictionWriters }
func (s *TTFTScorer) ReadsState() []AnyStateKey    { return predictionWriters }

var (
	_ StateWriter = (*PrefixScorer)(nil)
	_ StateWriter = (*ApproxScorer)(nil)
	_ StateReader = (*TTFTScorer)(nil)
)
