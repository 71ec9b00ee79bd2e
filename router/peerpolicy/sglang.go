package peerpolicy

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/llmgw/llmgw/router/scheduler"
)

// SGLangParams tune the sglang-cache-aware scorer. The defaults are the
// SGLang Model Gateway's command-line defaults (docs/PEER_POLICIES.md).
type SGLangParams struct {
	// CacheThreshold: when the best replica's match exceeds this share of
	// the prompt, the request goes there; otherwise to the replica with the
	// smallest tree.
	CacheThreshold float64 `json:"cache_threshold"`
	// BalanceAbsThreshold and BalanceRelThreshold: the load is imbalanced,
	// and the request goes to the least loaded replica, when
	// max - min > abs and max > rel x min, counting the router's requests
	// in flight.
	BalanceAbsThreshold int     `json:"balance_abs_threshold"`
	BalanceRelThreshold float64 `json:"balance_rel_threshold"`
	// MaxTreeBlocks caps each replica's tree, as the gateway's periodic LRU
	// eviction does (max_tree_size, counted here in prompt blocks rather
	// than characters).
	MaxTreeBlocks int `json:"max_tree_blocks"`
	// TTL and MaxEntries bound the routing history that stands in for the
	// tree (the gateway's tree has no expiry; the TTL only bounds memory).
	TTL        scheduler.Duration `json:"ttl"`
	MaxEntries int                `json:"max_entries"`
}

func defaultSGLangParams() SGLangParams {
	return SGLangParams{CacheThreshold: 0.3, BalanceAbsThreshold: 64, BalanceRelThreshold: 1.5,
		MaxTreeBlocks: 1 << 20, TTL: scheduler.Duration(24 * time.Hour), MaxEntries: 1 << 20}
}

func (p *SGLangParams) validate() error {
	switch {
	case !(p.CacheThreshold >= 0 && p.CacheThreshold <= 1):
		return fmt.Errorf("cache_threshold %g is not in [0, 1]", p.CacheThreshold)
	case p.BalanceAbsThreshold < 0:
		return fmt.Errorf("balance_abs_threshold %d is negative", p.BalanceAbsThreshold)
	case !(p.BalanceRelThreshold >= 1) || math.IsInf(p.BalanceRelThreshold, 0):
		return fmt.Errorf("balance_rel_threshold %g must be a finite number >= 1", p.BalanceRelThreshold)
	case p.MaxTreeBlocks <= 0:
		return fmt.Errorf("max_tree_blocks must be positive")
	case p.TTL <= 0:
		return fmt.Errorf("ttl must be positive")
	case p.MaxEntries <= 0:
		return fmt.Errorf("max_entries must be positive")
	}
	return nil
}

// SGLangCacheAwareScorer is the SGLang Model Gateway's cache_aware policy
// as one scorer: it makes the gateway's whole decision and scores the
// replica it would pick 1 (several when they tie), every other 0, so it
// runs with the max-score picker alone.
//
//   - When the router's requests in flight are imbalanced (max - min >
//     balance_abs_threshold and max > balance_rel_threshold x min), the
//     least loaded replica.
//   - Otherwise the replica whose routing history matches the longest
//     prefix of the prompt, if that match is more than cache_threshold of
//     the prompt; if not, the replica with the smallest tree.
//
// Every routed prompt is inserted into its replica's tree, in both cases.
// The gateway's approximate radix tree of raw characters is llmgw's
// routing history of prompt blocks here (token blocks with a tokenizer,
// text chunks without), and a tree's size is the blocks inserted for the
// replica that its tree did not hold yet, capped at max_tree_blocks.
type SGLangCacheAwareScorer struct {
	name scheduler.TypedName
	p    SGLangParams
	hist *scheduler.History

	mu   sync.Mutex
	size map[string]int // replica -> blocks in its tree
}

func newSGLangScorer(name scheduler.TypedName, p SGLangParams, now func() time.Time) *SGLangCacheAwareScorer {
	return &SGLangCacheAwareScorer{name: name, p: p, hist: scheduler.NewHistory(time.Duration(p.TTL), p.MaxEntries, now), size: map[string]int{}}
}

func (s *SGLangCacheAwareScorer) TypedName() scheduler.TypedName { return s.name }

func (s *SGLangCacheAwareScorer) WritesState() []scheduler.AnyStateKey { return predictionKeys }

func (s *SGLangCacheAwareScorer) Score(_ context.Context, req *scheduler.Request, cands []scheduler.Candidate, scores []float64) {
	if len(cands) == 0 {
		return
	}
	lo, hi := cands[0].Load.InFlight, cands[0].Load.InFlight
	for i := range cands {
		lo, hi = min(lo, cands[i].Load.InFlight), max(hi, cands[i].Load.InFlight)
	}
	if hi-lo > s.p.BalanceAbsThreshold && float64(hi) > float64(lo)*s.p.BalanceRelThreshold {
		for i := range cands {
			scores[i] = b2f(cands[i].Load.InFlight == lo)
		}
		return
	}
	keys := req.HistoryKeys()
	depths := scores[:len(cands)] // each candidate's match, until the choice is known
	clear(depths)
	best := 0
	s.hist.Match(keys, func(replica string, d int) {
		for i := range cands {
			if cands[i].ID == replica {
				depths[i] = float64(d)
				scheduler.NotePrediction(req, i, scheduler.Prediction{Blocks: d, Credit: float64(d), Mode: scheduler.ModeApprox})
				best = max(best, d)
			}
		}
	})
	if len(keys) > 0 && float64(best)/float64(len(keys)) > s.p.CacheThreshold {
		for i, d := range depths {
			scores[i] = b2f(int(d) == best)
		}
		return
	}
	s.mu.Lock()
	smallest := math.MaxInt
	for i := range cands {
		smallest = min(smallest, s.size[cands[i].ID])
	}
	for i := range cands {
		scores[i] = b2f(s.size[cands[i].ID] == smallest)
	}
	s.mu.Unlock()
}

// Routed inserts the prompt into chosen's tree.
func (s *SGLangCacheAwareScorer) Routed(req *scheduler.Request, chosen *scheduler.Candidate) {
	keys := req.HistoryKeys()
	if len(keys) == 0 {
		return
	}
	held := 0
	s.hist.Match(keys, func(replica string, d int) {
		if replica == chosen.ID {
			held = d
		}
	})
	s.hist.Record(keys, chosen.ID)
	s.mu.Lock()
	s.size[chosen.ID] = min(s.size[chosen.ID]+len(keys)-held, s.p.MaxTreeBlocks)
	if len(s.size) > maxReplicas {
		clear(s.size) // replica ids change only with new allocations
	}
	s.mu.Unlock()
}

var (
	_ scheduler.Scorer      = (*SGLangCacheAwareScorer)(nil)
	_ scheduler.Observer    = (*SGLangCacheAwareScorer)(nil)
	_ scheduler.StateWriter = (*SGLangCacheAwareScorer)(nil)
)
