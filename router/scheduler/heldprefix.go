package scheduler

import "github.com/llmgw/llmgw/router/index"

// A Mamba group holds its state only where a computed prompt ended, so
// under eviction a replica often holds a session's whole full-attention
// prefix but not the state at its end: the engine's hit there is short
// or nothing. Routed on that hit alone, the turn looks as cold at home as
// anywhere and the load scorers move it, to a replica holding nothing of
// the session, where it evicts other sessions' states; its own prefix is
// left behind and its next turns start cold again. On the replica that
// holds the full-attention prefix, this turn's prefill saves the Mamba
// state at the prompt's end, and every later turn of the session hits
// there. The held-prefix credit prices that: a share (HeldPrefixCredit)
// of the full-attention prefix an end-state replica holds past the
// engine's hit counts as routing credit, though not as predicted cached
// tokens (Prediction.Blocks stays the engine's hit).

// heldPrefix is, for each candidate, the full-attention hit of the
// prompt (the full-attention groups alone, RuleFullOnly), when the rule
// is the engine's, the credit is on and some exact candidate keeps a
// Mamba group; nil otherwise, and then no lookup is made.
func (s *PrefixScorer) heldPrefix(req *Request, cands []Candidate, sc *prefixScratch) []index.Match {
	if s.held == nil || s.p.HeldPrefixCredit == 0 {
		return nil
	}
	mamba := false
	for i := range cands {
		mamba = mamba || cands[i].Mode == ModeExact && s.hybrid.EndStateOnly(cands[i].ID)
	}
	if !mamba {
		return nil
	}
	sc.held = s.held.LookupReplicasRule(req.Model, req.Keys, s.p.strideFor(req), maxHit(req), RuleFullOnly, sc.ids, sc.held)
	return sc.held
}

// heldCredit is credit raised by the held-prefix credit of an end-state
// candidate: held is its full-attention match, spec the depth routing
// history credits it before the end-state rule cut it (the prompt's
// blocks sent there, whose state will be saved where they ended).
func (s *PrefixScorer) heldCredit(credit float64, held index.Match, spec int) float64 {
	h := float64(held.GPUBlocks) + s.p.CPUWeight*float64(held.Blocks-held.GPUBlocks)
	h = max(h, float64(spec)) // blocks routed there whose events have not arrived
	if h <= credit {
		return credit
	}
	return credit + s.p.HeldPrefixCredit*(h-credit)
}
