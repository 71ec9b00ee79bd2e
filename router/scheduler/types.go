package scheduler

import "github.com/llmgw/llmgw/router/load"

// Mode is how a replica is routed: with exact prefix knowledge from KV
// events, with the router's own routing history, or by load alone.
type Mode string

// Routing modes, as shown in metrics, logs and the response header.
const (
	ModeExact  Mode = "exact"
	ModeApprox Mode = "approx"
	ModeLoad   Mode = "load"
)

// Request is what the scheduler knows about one request.
type Request struct {
	Model string
	// Keys are the prompt's canonical block keys (internal/blockkey), or nil
	// while the model's tokenizer is unavailable.
	Keys []uint64
	// ApproxKeys identify prompt blocks for the routing-history scorers
	// when Keys is nil (e.g. keys of fixed-size text chunks).
	ApproxKeys []uint64
	// BlockTokens is the number of tokens per key, to report predicted
	// cached tokens (0: unknown).
	BlockTokens int
	// PromptTokens estimates the prompt's length, for load accounting.
	PromptTokens int
	// SessionID comes from the session header; empty when absent.
	SessionID string
	// Fallbacks caps how many fallbacks a Decision lists, for a caller
	// that will try only so many replicas (the gateway's attempts); 0
	// lists every other candidate (the explain API).
	Fallbacks int

	cycle cycleState
}

// Reset makes r the request next, keeping the scratch memory earlier
// Schedule calls left in r, so that scheduling a reused Request allocates
// nothing. Decisions made for r before are invalid afterwards.
func (r *Request) Reset(next Request) {
	c := r.cycle
	*r = next
	r.cycle = c
}

// HistoryKeys are the keys routing history uses: exact keys when known,
// else ApproxKeys. Plugins outside the package that keep a History record
// and match these, so that they work with or without a tokenizer.
func (r *Request) HistoryKeys() []uint64 {
	if r.Keys != nil {
		return r.Keys
	}
	return r.ApproxKeys
}

// Candidate is a replica the request may go to.
type Candidate struct {
	ID    string // replica id, "<alloc id>/<task>"
	Model string
	// Mode says what prefix knowledge exists for the replica: exact when its
	// KV events flow and are in sync, approx otherwise.
	Mode     Mode
	Healthy  bool
	Draining bool
	Load     load.Load
}

// cycleState carries per-request facts from scorers to the decision
// (state, indexed by StateKey, each indexed like the n candidates being
// scored), and the scratch memory Schedule works in, kept so that
// scheduling a reused Request allocates nothing. One Schedule call uses it
// at a time, from one goroutine.
type cycleState struct {
	n     int        // candidates being scored; 0 outside Schedule
	state []resetter // by StateKey id; nil for keys not used on this Request

	live                []Candidate // the filters' survivors
	warm                Ranked      // Decision.Warm's
	totals, per, scores []float64
	order               []int
	sortKeys            []uint64
	ranked              []Ranked
	filtered            map[string]int
}

// resetCycle sizes the per-candidate state for n candidates, all unset.
func (r *Request) resetCycle(n int) {
	c := &r.cycle
	c.n = n
	for _, s := range c.state {
		if s != nil {
			s.reset(n)
		}
	}
}

// resize returns s with length n and every element zero, reusing its array
// when it is large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
