package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Replicator proposes, after a decision, a second candidate to compute the
// request's shared prefix on ahead of demand: a replica that is idle now
// and will then serve the prefix's next requests from its cache. It runs
// after the picker, reads what the scorers left in the request's state,
// and returns the position in cands of the candidate to copy the prefix
// to, or -1 for none. The router sends that candidate the prompt's
// prefill alone (one output token) beside the request itself.
type Replicator interface {
	Plugin
	Replicate(ctx context.Context, req *Request, cands []Candidate, chosen int) int
}

// HotPrefixParams tune the hot-prefix replicator.
type HotPrefixParams struct {
	// MinBlocks is the shortest shared prefix worth copying, in blocks: a
	// shorter one costs a replica little to compute when asked.
	MinBlocks int `json:"min_blocks"`
	// Window and MinSeconds say when a prefix is hot: it was the deepest
	// cached prefix of requests sent in at least MinSeconds distinct
	// seconds of the last Window. Distinct seconds, not requests, so that
	// the siblings of one burst (which arrive in the same second) do not
	// make their context hot; sessions and sub-agent groups that keep
	// coming back to one head do.
	Window     Duration `json:"window"`
	MinSeconds int      `json:"min_seconds"`
	// MaxEntries caps the prefixes remembered.
	MaxEntries int `json:"max_entries"`
}

// maxHotSeconds bounds MinSeconds: each prefix keeps that many seconds.
const maxHotSeconds = 8

func defaultHotPrefixParams() HotPrefixParams {
	return HotPrefixParams{MinBlocks: 32, Window: Duration(30 * time.Second), MinSeconds: 3, MaxEntries: 65536}
}

func (p *HotPrefixParams) validate() error {
	switch {
	case p.MinBlocks < 1:
		return fmt.Errorf("min_blocks %d must be at least 1", p.MinBlocks)
	case p.Window <= 0:
		return fmt.Errorf("window must be positive")
	case p.MinSeconds < 1 || p.MinSeconds > maxHotSeconds:
		return fmt.Errorf("min_seconds %d must be in 1..%d", p.MinSeconds, maxHotSeconds)
	case p.MaxEntries < 1:
		return fmt.Errorf("max_entries %d must be positive", p.MaxEntries)
	}
	return nil
}

// HotPrefix copies a prefix many requests share onto idle replicas before
// a burst needs them. The prefix scorers and ttft price each request
// alone, and for each new session over a shared head the cheapest first
// turn is where the head already is, so the head stays on the replicas
// that computed it first; when a group of siblings over it arrives, they
// queue there while the other replicas, cold, would each have to compute
// the whole head first. HotPrefix notes, for every request sent, the
// deepest prefix of its prompt any candidate holds (the prediction the
// prefix scorers left), and once that prefix is hot (HotPrefixParams)
// proposes an idle candidate that lacks it: nothing queued or in flight
// there from any router, nothing waiting in its engine. Copying costs
// that replica a prefill it had time for, and nothing once every
// candidate holds the prefix.
type HotPrefix struct {
	name TypedName
	p    HotPrefixParams
	now  func() time.Time

	mu         sync.Mutex
	cur, older map[uint64]*hotSeconds // two generations, as approx-prefix's history
}

// hotSeconds are the distinct seconds (Unix) a prefix was last the
// deepest held prefix of a sent request, newest first; 0 is none.
type hotSeconds [maxHotSeconds]int64

// hotKey hands the prefix a decision found from Replicate to Routed.
var hotKey = NewStateKey[uint64]("hot prefix key")

func newHotPrefix(name TypedName, p HotPrefixParams, now func() time.Time) *HotPrefix {
	return &HotPrefix{name: name, p: p, now: now, cur: map[uint64]*hotSeconds{}}
}

func (h *HotPrefix) TypedName() TypedName { return h.name }

// ReadsState lists Predictions: the replicator reads what the prefix
// scorers predicted for each candidate.
func (h *HotPrefix) ReadsState() []AnyStateKey { return predictionWriters }

// Replicate returns an idle candidate lacking the request's deepest held
// prefix when that prefix is hot, else -1.
func (h *HotPrefix) Replicate(_ context.Context, req *Request, cands []Candidate, chosen int) int {
	keys := req.HistoryKeys()
	held := 0
	for i := range cands {
		b, _, _ := req.predicted(i)
		held = max(held, min(b, len(keys)))
	}
	if held < h.p.MinBlocks || len(cands) == 0 {
		return -1
	}
	key := keys[held-1]
	hotKey.Set(req, 0, key) // for Routed
	if !h.hot(key) {
		return -1
	}
	best := -1
	for i := range cands {
		c := &cands[i]
		if b, _, _ := req.predicted(i); i == chosen || b >= held || !idle(c) {
			continue
		}
		if best < 0 || c.Load.KVUsage < cands[best].Load.KVUsage {
			best = i
		}
	}
	return best
}

// idle reports whether nothing is queued on c: no request of any router
// in flight and none waiting in its engine.
func idle(c *Candidate) bool {
	return c.Load.InFlight == 0 && c.Load.PrefillTokens == 0 && c.Load.Waiting < 1
}

// Routed notes the second in which a request whose deepest held prefix
// Replicate found was sent.
func (h *HotPrefix) Routed(req *Request, _ *Candidate) {
	key, ok := hotKey.Get(req, 0)
	if !ok {
		return
	}
	sec := h.now().Unix()
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.lookup(key)
	if s == nil {
		if len(h.cur) >= h.p.MaxEntries {
			h.older, h.cur = h.cur, make(map[uint64]*hotSeconds, len(h.cur))
		}
		s = &hotSeconds{}
		h.cur[key] = s
	}
	if s[0] == sec {
		return
	}
	copy(s[1:], s[:maxHotSeconds-1])
	s[0] = sec
}

// lookup finds key's seconds, moving them from the older generation to
// the current one. h.mu is held.
func (h *HotPrefix) lookup(key uint64) *hotSeconds {
	if s, ok := h.cur[key]; ok {
		return s
	}
	s, ok := h.older[key]
	if !ok {
		return nil
	}
	delete(h.older, key)
	if len(h.cur) < h.p.MaxEntries {
		h.cur[key] = s
	}
	return s
}

// hot reports whether key was noted in MinSeconds distinct seconds of the
// last Window.
func (h *HotPrefix) hot(key uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.cur[key]
	if !ok {
		s, ok = h.older[key]
	}
	if !ok {
		return false
	}
	oldest := s[h.p.MinSeconds-1]
	return oldest != 0 && h.now().Sub(time.Unix(oldest, 0)) <= time.Duration(h.p.Window)
}

var (
	_ Replicator  = (*HotPrefix)(nil)
	_ Observer    = (*HotPrefix)(nil)
	_ StateReader = (*HotPrefix)(nil)
)
