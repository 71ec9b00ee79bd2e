package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/llmgw/llmgw/router/index"
)

// PrefixIndex is the precise index the prefix scorer reads: per model, which
// replicas hold how much of a prompt (router/index, one Index per model).
// out[i] is the match of replicas[i] (index.Models.LookupReplicas).
type PrefixIndex interface {
	LookupReplicas(model string, keys []uint64, stride int, replicas []string, out []index.Match) []index.Match
}

// PrefixParams tune the precise prefix scorer.
type PrefixParams struct {
	// CPUWeight is the credit of a block cached only in CPU memory relative
	// to a GPU block (Dynamo uses 0.75 for host memory).
	CPUWeight float64 `json:"cpu_weight"`
	// SpeculativeTTL credits a routed prompt's blocks to the chosen replica
	// for this long, so sibling requests in a burst follow it before the
	// engine's KV events arrive ("0s": off).
	SpeculativeTTL Duration `json:"speculative_ttl"`
	// SpeculativeMaxEntries caps the speculative (block, replica) pairs.
	SpeculativeMaxEntries int `json:"speculative_max_entries"`
	// Stride > 1 probes every stride-th block of long prompts and reads the
	// blocks between only where a replica drops out (index.LookupStride):
	// much faster for 32k+ token prompts, exact while replicas' cached
	// blocks form prefixes (vLLM evicts from the tail). 1 reads every block.
	Stride int `json:"stride"`
	// LongPromptTokens is the prompt length from which LongStride applies
	// (0: never), so long prompts get the strided walk without any config.
	LongPromptTokens int `json:"long_prompt_tokens"`
	// LongStride is the stride for prompts of LongPromptTokens or more (the
	// larger of it and Stride is used).
	LongStride int `json:"long_stride"`
	// KVGroupsRule is how a hybrid replica's hit is computed over its
	// KV-cache groups: "engine" (vLLM's rule, the default), "all_full"
	// (every group's blocks as if full attention, as llmgw did before) or
	// "full_only" (full-attention groups alone, Dynamo's choice). Only the
	// engine's rule predicts what the engine reuses; the others are there
	// to measure it against (docs/BENCHMARKS.md).
	KVGroupsRule string `json:"kv_groups_rule"`
	// HeldPrefixCredit is, under the engine's rule, the share (0..1) of
	// the full-attention prefix a Mamba replica holds past the engine's
	// hit that counts as routing credit, not as predicted cached tokens:
	// this turn's prefill saves the Mamba state there, so the session's
	// later turns hit on that replica (heldprefix.go). 0 routes on the
	// engine's hit alone.
	HeldPrefixCredit float64 `json:"held_prefix_credit"`
	// QueuedCredit is the share (0..1) of a replica's speculative credit
	// that this scorer's score counts while the replica still has routed
	// prefill it has not answered: the context the credit stands for is
	// then still being computed, and a sibling sent there waits for that
	// step to end before its own starts. The ttft scorer prices the wait
	// and the credit in full either way; this only decides whether the
	// prefix score also pulls towards a cache that does not exist yet.
	QueuedCredit float64 `json:"queued_credit"`
}

func defaultPrefixParams() PrefixParams {
	return PrefixParams{CPUWeight: 0.75, SpeculativeTTL: Duration(2 * time.Second), SpeculativeMaxEntries: 1 << 18, Stride: 1,
		LongPromptTokens: DefaultLongPromptTokens, LongStride: DefaultLongStride, KVGroupsRule: RuleEngine, HeldPrefixCredit: 1,
		QueuedCredit: 1}
}

// Defaults of the automatic stride: prompts of 32k tokens or more (2,048
// blocks of 16) probe every 32nd block.
const (
	DefaultLongPromptTokens = 32 << 10
	DefaultLongStride       = 32
)

// strideFor is the stride req's lookup uses: LongStride for long prompts
// (counted in tokens; from the keys when the token count is unknown).
func (p *PrefixParams) strideFor(req *Request) int {
	tokens := req.PromptTokens
	if tokens <= 0 {
		tokens = len(req.Keys) * req.BlockTokens
	}
	if p.LongPromptTokens > 0 && tokens >= p.LongPromptTokens {
		return max(p.Stride, p.LongStride)
	}
	return p.Stride
}

func (p *PrefixParams) validate() error {
	if p.CPUWeight < 0 || p.CPUWeight > 1 {
		return fmt.Errorf("cpu_weight %g is not in [0, 1]", p.CPUWeight)
	}
	if p.SpeculativeMaxEntries <= 0 {
		return fmt.Errorf("speculative_max_entries must be positive")
	}
	if p.Stride < 1 || p.Stride > 4096 {
		return fmt.Errorf("stride %d is not in 1..4096", p.Stride)
	}
	if p.LongStride < 1 || p.LongStride > 4096 {
		return fmt.Errorf("long_stride %d is not in 1..4096", p.LongStride)
	}
	switch p.KVGroupsRule {
	case "", RuleEngine, RuleAllFull, RuleFullOnly:
	default:
		return fmt.Errorf("kv_groups_rule %q: want %q, %q or %q", p.KVGroupsRule, RuleEngine, RuleAllFull, RuleFullOnly)
	}
	if !(p.HeldPrefixCredit >= 0 && p.HeldPrefixCredit <= 1) {
		return fmt.Errorf("held_prefix_credit %g is not in [0, 1]", p.HeldPrefixCredit)
	}
	if !(p.QueuedCredit >= 0 && p.QueuedCredit <= 1) {
		return fmt.Errorf("queued_credit %g is not in [0, 1]", p.QueuedCredit)
	}
	if p.LongPromptTokens < 0 {
		return fmt.Errorf("long_prompt_tokens %d is negative (0 turns the long-prompt stride off)", p.LongPromptTokens)
	}
	return nil
}

// PrefixScorer scores exact-mode candidates by the share of the prompt's
// blocks they already cache, from the KV-event index: a GPU block counts 1,
// a CPU-only block CPUWeight. Candidates in other modes, or requests without
// canonical keys, score 0 here (the approximate scorer covers them).
type PrefixScorer struct {
	name  TypedName
	p     PrefixParams
	index PrefixIndex
	spec  *History
	// hybrid is index when it applies the engine's rule over KV-cache
	// groups; nil otherwise.
	hybrid HybridIndex
	// ruled is index when KVGroupsRule is not the engine's and the index
	// can apply another rule; nil otherwise.
	ruled RuleIndex
	// endState is whether Mamba replicas get speculative credit only
	// where a sent prompt ended: the engine's rule, not the others.
	endState bool
	// held is index when endState and it can read the full-attention
	// groups alone, for the held-prefix credit; nil otherwise.
	held RuleIndex

	pool sync.Pool // *prefixScratch
}

// prefixScratch is one Score call's working memory, pooled so that scoring
// allocates nothing in the steady state.
type prefixScratch struct {
	ids     []string           // the candidates' replica ids
	matches []index.Match      // matches[i] is candidate i's
	spec    map[string]specHit // replica -> speculatively credited depth and rank
	held    []index.Match      // held[i] is candidate i's full-attention match (heldPrefix)
}

func newPrefixScorer(name TypedName, p PrefixParams, ix PrefixIndex, now func() time.Time) *PrefixScorer {
	hy, _ := ix.(HybridIndex)
	s := &PrefixScorer{
		name:     name,
		p:        p,
		index:    ix,
		spec:     NewHistory(time.Duration(p.SpeculativeTTL), p.SpeculativeMaxEntries, now),
		hybrid:   hy,
		endState: hy != nil,
	}
	if ri, ok := ix.(RuleIndex); ok && p.KVGroupsRule != RuleEngine && p.KVGroupsRule != "" {
		s.ruled, s.endState = ri, false
	} else if ok && s.endState {
		s.held = ri
	}
	return s
}

func (s *PrefixScorer) TypedName() TypedName { return s.name }

func (s *PrefixScorer) Score(_ context.Context, req *Request, cands []Candidate, scores []float64) {
	n := len(req.Keys)
	if n == 0 {
		return
	}
	exact := false
	for i := range cands {
		exact = exact || cands[i].Mode == ModeExact
	}
	if !exact {
		return
	}
	sc, _ := s.pool.Get().(*prefixScratch)
	if sc == nil {
		sc = &prefixScratch{spec: map[string]specHit{}}
	}
	defer s.pool.Put(sc)
	sc.ids = sc.ids[:0]
	for i := range cands {
		sc.ids = append(sc.ids, cands[i].ID)
	}
	var matches []index.Match
	switch {
	case s.ruled != nil:
		matches = s.ruled.LookupReplicasRule(req.Model, req.Keys, s.p.strideFor(req), maxHit(req), s.p.KVGroupsRule, sc.ids, sc.matches)
	case s.hybrid != nil:
		matches = s.hybrid.LookupReplicasMax(req.Model, req.Keys, s.p.strideFor(req), maxHit(req), sc.ids, sc.matches)
	default:
		matches = s.index.LookupReplicas(req.Model, req.Keys, s.p.strideFor(req), sc.ids, sc.matches)
	}
	sc.matches = matches
	spec := sc.spec
	clear(spec)
	s.spec.matchRanks(req.Keys, func(replica string, depth, rank int) { spec[replica] = specHit{depth, rank} })
	held := s.heldPrefix(req, cands, sc)
	for i := range cands {
		c := &cands[i]
		if c.Mode != ModeExact {
			continue
		}
		m := matches[i]
		blocks := m.Blocks
		credit := float64(m.GPUBlocks) + s.p.CPUWeight*float64(m.Blocks-m.GPUBlocks)
		d := spec[c.ID].depth
		sent := d
		endState := (d > 0 || held != nil) && s.endState && s.hybrid.EndStateOnly(c.ID)
		if d > 0 && endState {
			d = endStateCredit(s.spec, req.Keys, c.ID, d, maxHit(req))
		}
		known := credit
		if float64(d) > credit {
			credit, blocks = float64(d), max(blocks, d)
		}
		if held != nil && endState {
			// What the events alone credit, held prefix included, is
			// what queued_credit leaves whole below.
			known = s.heldCredit(known, held[i], 0)
			credit = s.heldCredit(credit, held[i], min(sent, maxHit(req)))
		}
		scored := credit
		if c.Load.PrefillTokens > 0 && credit > known {
			scored = known + s.p.QueuedCredit*(credit-known)
		}
		scores[i] = scored / float64(n)
		NotePrediction(req, i, Prediction{Blocks: blocks, Credit: credit, Mode: ModeExact, Rank: spec[c.ID].rankHit(m)})
	}
}

// specHit is how deep a prompt's speculative credit on a replica goes and
// the data-parallel rank the credited prompt was pinned to (-1: none).
type specHit struct{ depth, rank int }

// rankHit is the rank a prediction rests on: the rank the KV events show
// holding the longest match m, unless a prompt pinned to a rank was sent
// deeper into this one since, whose blocks that rank is about to cache (a
// sibling sent before the first's events arrive follows it there).
func (h specHit) rankHit(m index.Match) RankHit {
	if h.rank >= 0 && h.depth > m.Blocks {
		return RankHit{Rank: h.rank, Blocks: h.depth}
	}
	return RankHit{Rank: m.Rank, Blocks: m.Blocks}
}

// Routed credits the prompt's blocks to an exact-mode replica for the
// speculative TTL.
func (s *PrefixScorer) Routed(req *Request, chosen *Candidate) {
	s.RoutedRank(req, chosen, -1)
}

// RoutedRank is Routed for a request pinned to chosen's data-parallel
// rank (-1: not pinned): the credit names the rank, so a prompt sharing
// the prefix is predicted, and pinned, there.
func (s *PrefixScorer) RoutedRank(req *Request, chosen *Candidate, rank int) {
	if chosen.Mode == ModeExact && len(req.Keys) > 0 {
		s.spec.recordRank(req.Keys, chosen.ID, rank)
		if s.endState && s.hybrid.EndStateOnly(chosen.ID) {
			recordEnd(s.spec, req.Keys, chosen.ID)
		}
	}
}

var (
	_ Scorer       = (*PrefixScorer)(nil)
	_ Observer     = (*PrefixScorer)(nil)
	_ RankObserver = (*PrefixScorer)(nil)
)
