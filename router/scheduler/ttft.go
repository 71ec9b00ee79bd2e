package scheduler

import (
	"context"
	"fmt"
	"math"

	"github.com/llmgw/llmgw/router/load"
)

// TTFTParams tune the time-to-first-token scorer. Every cost is counted in
// prompt tokens to prefill, the unit the engine's work comes in, so no
// parameter depends on how fast a replica's GPU is.
type TTFTParams struct {
	// BaseTokens is what any request costs besides its prefill (the API
	// server, one engine step), in prefill tokens. It keeps a full cache hit
	// from making every other candidate look infinitely worse.
	BaseTokens float64 `json:"base_tokens"`
	// WaitingTokens is the prefill assumed per request the engine reports
	// waiting (vllm:num_requests_waiting) beyond those the routers have in
	// flight there, whose prompts the routers do not know: requests of
	// routers that share no load, or of clients that reach the replica
	// directly.
	WaitingTokens float64 `json:"waiting_tokens"`
	// RunningTokens is the cost of each running request: decoding sequences
	// share every engine step with a new prompt's prefill.
	RunningTokens float64 `json:"running_tokens"`
}

func defaultTTFTParams() TTFTParams {
	return TTFTParams{BaseTokens: 256, WaitingTokens: 512, RunningTokens: 128}
}

func (p *TTFTParams) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"base_tokens", p.BaseTokens}, {"waiting_tokens", p.WaitingTokens}, {"running_tokens", p.RunningTokens}} {
		if f.v < 0 || math.IsInf(f.v, 0) || math.IsNaN(f.v) {
			return fmt.Errorf("%s %g must be a finite number >= 0", f.name, f.v)
		}
	}
	if p.BaseTokens == 0 {
		return fmt.Errorf("base_tokens must be positive")
	}
	return nil
}

// TTFTScorer prices each candidate by its predicted time to first token,
// in prefill tokens, and scores the cheapest 1 and the others cheapest/cost.
// The cost is the prompt tokens the candidate does not cache (from the
// predictions the prefix scorers noted, so it must come after them in the
// config) plus the work queued ahead of the request: the routers'
// unanswered uncached prompt tokens there not yet computed (this router's
// and what its peers report), the engine's waiting requests the routers
// did not send, and a little per running request.
//
// This is what weighs a cached prefix against load: a replica holding the
// prompt wins while its queue costs less than the prefill it saves, and
// loses to an idle rival once its queue costs more, so one hot prefix no
// longer piles every request on the replica that cached it first. Equally
// loaded replicas without the prompt tie, and so spread by the other
// scorers.
type TTFTScorer struct {
	name TypedName
	p    TTFTParams
}

func (s *TTFTScorer) TypedName() TypedName { return s.name }

func (s *TTFTScorer) Score(_ context.Context, req *Request, cands []Candidate, scores []float64) {
	if len(cands) == 0 {
		return
	}
	prompt, perBlock := req.PromptSize()
	best := math.Inf(1)
	for i := range cands {
		uncached := bounded(prompt - bounded(req.creditOf(i))*perBlock)
		c := s.p.BaseTokens + uncached + s.queued(&cands[i].Load)
		scores[i] = c // the cost, until the minimum is known
		best = min(best, c)
	}
	for i, c := range scores[:len(cands)] {
		scores[i] = best / c
	}
}

// queued is the work ahead of a new request on a replica, in prefill
// tokens: the routers' own queued prefill (as much of it as the replica
// has not computed yet, router/load), plus WaitingTokens for each request
// the engine reports waiting beyond those the routers have in flight
// there, which only a client the routers do not see can have sent.
//
// The routers' waiting requests are not priced at WaitingTokens: a burst's
// siblings wait behind the one prefilling their shared context and need
// only their own few tokens once it is cached, which PrefillTokens counts
// and a flat price per request overstated tenfold, sending the next burst
// to idle replicas that computed the context again.
func (s *TTFTScorer) queued(l *load.Load) float64 {
	unseen := positive(bounded(l.Waiting) - bounded(float64(l.InFlight)))
	prefill := bounded(float64(l.PrefillTokens)) + s.p.WaitingTokens*unseen
	running := max(bounded(float64(l.InFlight)), bounded(l.Running))
	return prefill + s.p.RunningTokens*running
}

// bounded is a count made safe to add and multiply: 0 when negative or
// NaN, at most 1e9 (a scrape reporting infinity makes the replica the last
// choice rather than every score NaN).
func bounded(x float64) float64 { return min(positive(x), 1e9) }

// PromptSize is the prompt's length in tokens and the tokens one block of
// its keys stands for: from the token count when known, else from the
// keys and block size. It is exported for scorers outside the package that
// price a replica's cached credit (Predictions, in blocks) in tokens, as
// the ttft scorer does.
func (r *Request) PromptSize() (tokens, perBlock float64) {
	keys := len(r.HistoryKeys())
	tokens = float64(r.PromptTokens)
	if tokens <= 0 {
		tokens = float64(keys * r.BlockTokens)
	}
	switch {
	case r.BlockTokens > 0 && r.Keys != nil:
		perBlock = float64(r.BlockTokens)
	case keys > 0:
		perBlock = tokens / float64(keys) // text chunks: their share of the prompt
	}
	return tokens, perBlock
}

var _ Scorer = (*TTFTScorer)(nil)
