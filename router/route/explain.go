package route

import (
	"context"

	"github.com/llmgw/llmgw/router/scheduler"
)

// Explanation is a decision shown in full, for the admin API: every
// candidate's scores, the chosen one first.
type Explanation struct {
	Model        string         `json:"model"`
	PromptTokens int            `json:"prompt_tokens"`
	Blocks       int            `json:"blocks"`
	ExactKeys    bool           `json:"exact_keys"`
	Chosen       Explained      `json:"chosen"`
	Ranked       []Explained    `json:"ranked"`
	Filtered     map[string]int `json:"filtered"`
	OverheadUS   int64          `json:"overhead_us"`
	PD           *ExplainedPD   `json:"disaggregated,omitempty"`
}

// Explained is one candidate in an explanation.
type Explained struct {
	Replica      string             `json:"replica"`
	Mode         Mode               `json:"mode"`
	Total        float64            `json:"total"`
	Scores       map[string]float64 `json:"scores"`
	CachedTokens int                `json:"cached_tokens"`
	// KVGroups is each KV-cache group's part of a hybrid replica's hit.
	KVGroups any `json:"kv_groups,omitempty"`
}

// Explain decides in's request over every candidate, as Plan would in the
// key's own priority band, without sending or recording it.
func (pl *Planner) Explain(ctx context.Context, in Input) (*Explanation, *Error) {
	in.Priority, in.explain = "", true
	p, e := pl.plan(ctx, in, 0) // every candidate
	if e != nil {
		return nil, e
	}
	defer pl.Release(p)
	p.Grant.Finish(0) // never sent
	d := &p.decision
	out := &Explanation{
		Model: p.Request.Model, PromptTokens: p.PromptTokens, Blocks: len(p.sreq.Keys) + len(p.sreq.ApproxKeys),
		ExactKeys: p.sreq.Keys != nil, Filtered: d.Filtered, OverheadUS: p.Overhead.Microseconds(),
	}
	for _, r := range ranked(d) {
		e := explain(d, r, p.BlockTokens)
		if pl.d.KVGroups != nil && p.sreq.Keys != nil {
			e.KVGroups = pl.d.KVGroups(p.Request.Model, p.sreq.Keys, maxHitBlocks(p.PromptTokens, p.BlockTokens, len(p.sreq.Keys)), r.Candidate.ID)
		}
		out.Ranked = append(out.Ranked, e)
	}
	out.Chosen = out.Ranked[0]
	if p.pd.considered {
		pd := explainPD(p)
		out.PD = &pd
	}
	return out, nil
}

// ranked is d's candidates in order, the chosen one first.
func ranked(d *scheduler.Decision) []scheduler.Ranked {
	return append([]scheduler.Ranked{d.Chosen}, d.Fallbacks...)
}

// explain shows r's scores by scorer name.
func explain(d *scheduler.Decision, r scheduler.Ranked, blockTokens int) Explained {
	e := Explained{Replica: r.Candidate.ID, Mode: r.Mode, Total: r.Total, Scores: map[string]float64{}, CachedTokens: r.CachedBlocks * blockTokens}
	for i, name := range d.Scorers {
		e.Scores[name] = r.Scores[i]
	}
	return e
}

// maxHitBlocks is the longest cache hit the engine looks for on a prompt
// of tokens tokens: all of it but one token, in whole blocks of
// blockTokens, and at most keys blocks.
func maxHitBlocks(tokens, blockTokens, keys int) int {
	if tokens <= 0 || blockTokens <= 0 {
		return keys
	}
	return max(min(keys, (tokens-1)/blockTokens), 0)
}
