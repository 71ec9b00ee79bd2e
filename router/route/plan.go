package route

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/ratelimit"
	"github.com/llmgw/llmgw/router/scheduler"
)

// Mode is how a replica was routed (scheduler.Mode), re-exported so that
// callers of the planner need not know the scheduler.
type Mode = scheduler.Mode

// The routing modes: exact prefix knowledge from KV events, the router's
// own routing history, load alone, and a request served in two steps
// (prefill on one replica, decode on another).
const (
	ModeExact         = scheduler.ModeExact
	ModeApprox        = scheduler.ModeApprox
	ModeLoad          = scheduler.ModeLoad
	ModeDisaggregated = Mode("disaggregated")
)

// fallbackSpare is how many fallbacks a decision ranks beyond the
// attempts: attempts skips replicas that left the set since the decision.
const fallbackSpare = 2

// textBlockTokens is the tokens a text chunk's key stands for when the
// prompt has no exact keys: about four bytes per token.
const textBlockTokens = prompt.TextChunk / 4

// Attempt is one replica a request may be sent to, in order of
// preference.
type Attempt struct {
	Replica string // replica id
	Model   string // the replica's model (a LoRA request's base model)
	Address string // host:port of its engine
	Mode    Mode
	// CachedTokens is the prompt's predicted cached tokens there.
	CachedTokens int
	// Rank is the replica's data-parallel rank the prediction rests on
	// and the prompt blocks it holds (Blocks 0: none).
	Rank RankHit
	// PinRank is the data-parallel rank to send the request to when
	// Pinned: Rank's, when it holds any of the prompt, else, on a replica
	// that declares more than one rank (replicas.Replica.DataParallelSize),
	// one the planner chose (rankBalancer). Not Pinned, the engine balances
	// the request over its ranks.
	PinRank int
	Pinned  bool
	// ranks are the replica's data-parallel ranks when it declares more
	// than one, to count the request on PinRank; nil otherwise.
	ranks *rankLoad

	ranked scheduler.Ranked
}

// RankHit is a data-parallel rank and the prompt blocks it holds
// (scheduler.RankHit).
type RankHit = scheduler.RankHit

// Input is one request to plan.
type Input struct {
	Kind openai.Kind
	Body []byte
	// Session is the client's session id ("" for none).
	Session string
	// Priority is the request's admission.HeaderPriority value ("" for
	// the key's band).
	Priority string
	// Forward, when set, is the body the engine is sent instead of Body:
	// Body is then the chat rendering of a Responses or Messages request,
	// which is what the prompt's keys are computed from.
	Forward []byte
	// Responses says Body is a /v1/responses request rendered as chat.
	Responses bool
	// RequestID is the client's X-Request-Id ("" for none), for the log
	// of a request held while its model starts from zero.
	RequestID string

	explain bool // Explain's: never held for a cold start
}

// Error is a request the planner refuses, with the HTTP status and, where
// OpenAI's API has them, the error type and code the client gets.
type Error struct {
	Status  int
	Message string
	// Type and Code, when set, are OpenAI's error type and code.
	Type, Code string
	// Limit is the tenant's limit state, for a 429's x-ratelimit-* headers.
	Limit *ratelimit.Status
	// RetryAfter, when positive, is sent as Retry-After.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Message }

// Plan is a routing decision ready to send. The fields are the caller's
// to read; the plan belongs to the planner again after Release.
type Plan struct {
	Request      *openai.Request
	PromptTokens int
	// ExactTokens: PromptTokens were counted by the model's tokenizer,
	// not estimated from text.
	ExactTokens bool
	BlockTokens int
	// Attempts are the replicas to try in order, at most the planner's
	// Attempts; for a disaggregated request the decode step's.
	Attempts []Attempt
	// Grant is the tenant's hold on its limits (nil without limits),
	// finished by the caller when the response ends; Limits its state.
	Grant  *ratelimit.Grant
	Limits ratelimit.Status
	// Overhead is the time the decision took, the admission wait left out.
	Overhead time.Duration

	pl       *Planner
	sreq     scheduler.Request // its scratch memory is kept across reuses
	cands    []scheduler.Candidate
	decision scheduler.Decision
	pd       pdPlan
	// prefilled is the prefill replica that computed the prompt;
	// onRanks are the data-parallel rank counts its sent attempts are
	// counted on (rankBalancer), until Release.
	onRanks []*atomic.Int64
	// continuedFrom the failed replica a continuation follows.
	prefilled     *Attempt
	continuedFrom string
	// utility: a request that needs a replica but no prompt decision
	// (Place); nothing is learned from where it goes.
	utility bool
	// keep leaves out the model's replicas that do not serve the
	// request's endpoint (taskFilter); nil keeps all.
	keep func(id string) bool
}

func (pl *Planner) getPlan() *Plan {
	if p, ok := pl.plans.Get().(*Plan); ok {
		return p
	}
	return &Plan{pl: pl}
}

// Release gives p back for reuse once nothing refers to it (the proxy has
// returned), dropping what it holds of the request.
func (pl *Planner) Release(p *Plan) {
	if p == nil || p.continuedFrom != "" {
		return // a continuation is never pooled: its stream may outlive the caller
	}
	for i, c := range p.onRanks {
		c.Add(-1)
		p.onRanks[i] = nil
	}
	p.onRanks = p.onRanks[:0]
	p.Request, p.PromptTokens, p.ExactTokens, p.BlockTokens = nil, 0, false, 0
	p.Attempts, p.Grant, p.Limits, p.Overhead = p.Attempts[:0], nil, ratelimit.Status{}, 0
	p.decision, p.prefilled, p.utility, p.keep = scheduler.Decision{}, nil, false, nil
	p.sreq.Reset(scheduler.Request{})
	clear(p.cands)
	p.pd.reset()
	pl.plans.Put(p)
}

// Sent tells the planner the request is going to a's replica, before it
// answers: what the scheduler's observers learn from it (the prefix
// scorer's speculative credit, routing history, sessions) must reach the
// decisions of requests that arrive while this one is prefilled, such as
// the siblings of a fan-out burst.
func (p *Plan) Sent(a Attempt) {
	if !p.utility {
		p.pl.d.Scheduler.RoutedRank(&p.sreq, &a.ranked.Candidate, a.pinned())
	}
	if p.continuedFrom == "" && a.Pinned {
		// Counted until Release; a continuation, never released, is not.
		if c := a.ranks.begin(a.PinRank); c != nil {
			p.onRanks = append(p.onRanks, c)
		}
	}
}

// Served tells the planner a's replica answered, before any byte reaches
// the client: the decision is counted and logged for the replica that
// took it.
func (p *Plan) Served(a Attempt) {
	if p.utility {
		return
	}
	m := p.pl.metrics
	m.Decisions.WithLabelValues(string(a.Mode)).Inc()
	if p.continuedFrom == "" {
		m.CachedTokens.WithLabelValues(string(a.Mode)).Observe(float64(a.CachedTokens))
	}
	p.pl.decisions.record(p, a)
}

// attempts lists d's replicas in order, at most the planner's Attempts,
// skipping those that left the set since the decision and those in skip.
func (pl *Planner) attempts(dst []Attempt, d *scheduler.Decision, blockTokens int, skip []string) []Attempt {
	n := pl.d.Options.Attempts
	for i := -1; i < len(d.Fallbacks) && len(dst) < n; i++ {
		r := d.Chosen
		if i >= 0 {
			r = d.Fallbacks[i]
		}
		if slices.Contains(skip, r.Candidate.ID) {
			continue
		}
		rep, ok := pl.d.Replicas.Get(r.Candidate.ID)
		if !ok {
			continue // left the set since the decision
		}
		a := Attempt{Replica: r.Candidate.ID, Model: r.Candidate.Model, Address: rep.Address, Mode: r.Mode,
			CachedTokens: r.CachedBlocks * blockTokens, Rank: r.Rank, ranked: r}
		if rep.DataParallelSize > 1 {
			a.ranks = pl.ranks.of(rep.ID, rep.DataParallelSize)
		}
		switch {
		case r.Rank.Blocks > 0:
			a.PinRank, a.Pinned = r.Rank.Rank, true
		case a.ranks != nil:
			a.PinRank, a.Pinned = a.ranks.choose(), true
		}
		dst = append(dst, a)
	}
	return dst
}

// pinned is the rank a is pinned to, -1 for none.
func (a Attempt) pinned() int {
	if !a.Pinned {
		return -1
	}
	return a.PinRank
}
