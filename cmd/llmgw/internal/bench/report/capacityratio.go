package report

import (
	"fmt"
	"slices"
	"strings"
)

// CapacityRatio is the default's capacity at the SLO over the best
// peer's, run by run, the best peer being each run's own: the peer with
// the highest capacity in that run, so that a peer's lucky seed counts
// against the default. Routing targets are stated in this figure ("the
// default at 1.2x the best peer"), and a ratio of medians would hide a
// run in which the two tie.
//
// A swept capacity can lie outside the swept rates: below the lowest (it
// is somewhere under it) or at the top (it is at least that). A run
// where only one side is out of range gives a bound, not a ratio: the
// default at the top rate, or its peer under the lowest, gives a lower
// bound (the capacity out of range taken at the rate it passed); the
// reverse, an upper bound. Where both are out on the same side the sweep
// cannot tell them apart, and the run counts as 1.
type CapacityRatio struct {
	Spread
	// BestPeers are each run's best peer, in run order.
	BestPeers []string
	// BothHeldTop and BothMissedLowest count the runs that count as 1
	// because the sweep could not tell the two apart; AtLeast and AtMost
	// the runs whose figure is a lower or an upper bound.
	BothHeldTop, BothMissedLowest, AtLeast, AtMost int
}

// CapacityRatio is the default's capacity over the best peer's in each of
// the sweep's runs; false when no run has both the default and a peer.
func (s *Sweep) CapacityRatio() (CapacityRatio, bool) {
	var r CapacityRatio
	if len(s.Rates) == 0 {
		return r, false
	}
	lowest := s.Rates[0].Rate
	var xs []float64
	for _, run := range s.Runs() {
		d, ok := run.Capacity(s.Default)
		if !ok {
			continue
		}
		peer, p, ok := s.bestCapacity(run)
		if !ok {
			continue
		}
		r.BestPeers = append(r.BestPeers, peer)
		var x float64
		switch {
		case d.Above && p.Above:
			x = 1
			r.BothHeldTop++
		case d.Below && p.Below:
			x = 1
			r.BothMissedLowest++
		case p.Below:
			x = d.Rate / lowest
			r.AtLeast++
		case d.Below:
			x = lowest / p.Rate
			r.AtMost++
		default:
			// Both within the swept rates, or one held the top rate.
			x = d.Rate / p.Rate
			r.AtLeast += b2i(d.Above)
			r.AtMost += b2i(p.Above)
		}
		xs = append(xs, x)
	}
	r.Spread = spreadOf(xs)
	return r, len(xs) > 0
}

// bestCapacity is the peer with the highest capacity in run (the first
// in run order among equals) and that capacity.
func (s *Sweep) bestCapacity(run *Sweep) (string, Capacity, bool) {
	var best string
	var bc Capacity
	found := false
	for _, name := range run.policies() {
		if !s.peer(name) {
			continue
		}
		c, ok := run.Capacity(name)
		if ok && (!found || c.Rate > bc.Rate) {
			best, bc, found = name, c, true
		}
	}
	return best, bc, found
}

// capacityRatioSentence is the capacity ratio in words, for the
// verdict's paragraph: the figure, whether it is a tie, each run's best
// peer, and how many runs gave a bound rather than a ratio.
func (s *Sweep) capacityRatioSentence() string {
	r, ok := s.CapacityRatio()
	if !ok {
		return ""
	}
	figure := fmt.Sprintf("%.2fx", r.Median)
	if r.N > 1 && r.Max > r.Min {
		figure += fmt.Sprintf(" (%.2f-%.2fx)", r.Min, r.Max)
	}
	if r.Tie() {
		figure += ", a tie"
	}
	var notes []string
	if r.BothHeldTop > 0 {
		notes = append(notes, fmt.Sprintf("%s counted as 1 where both held the top swept rate", runCount(r.BothHeldTop)))
	}
	if r.BothMissedLowest > 0 {
		notes = append(notes, fmt.Sprintf("%s counted as 1 where both missed the lowest", runCount(r.BothMissedLowest)))
	}
	if r.AtLeast > 0 {
		notes = append(notes, fmt.Sprintf("%s only a lower bound (the default held the top rate or its peer missed the lowest)", runCount(r.AtLeast)))
	}
	if r.AtMost > 0 {
		notes = append(notes, fmt.Sprintf("%s only an upper bound (the peer held the top rate or the default missed the lowest)", runCount(r.AtMost)))
	}
	peers := strings.Join(r.BestPeers, ", ")
	if len(slices.Compact(slices.Clone(r.BestPeers))) == 1 {
		peers = r.BestPeers[0] // the same peer in every run
	}
	out := fmt.Sprintf("The default's capacity at the SLO over the best peer's (%s), run by run: %s", peers, figure)
	if len(notes) > 0 {
		out += "; " + strings.Join(notes, "; ")
	}
	return out + ". "
}

// runCount is "1 run" or "n runs".
func runCount(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}
