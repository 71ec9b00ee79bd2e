package report

import (
	"strings"
	"testing"
)

// duel is a sweep over rates 1, 2, 4, 8 of the default d and peers
// q1, q2, ... with the given shares of requests within the SLO (as
// shares builds them).
func duel(d []float64, peers ...[]float64) *Sweep {
	sw := shares("d", d...)
	for i, ps := range peers {
		for k := range sw.Rates {
			sw.Rates[k].Policies = append(sw.Rates[k].Policies, Summary{Policy: "q" + string(rune('1'+i)), Requests: 100, GoodputShare: ps[k]})
		}
	}
	return sw
}

// Shares over rates 1, 2, 4, 8 and the capacities they give.
var (
	crossAt3  = []float64{1, 0.95, 0.85, 0.5} // 2 + 0.05/0.1 x 2 = 3
	crossAt2  = []float64{1, 0.9, 0.7, 0.5}   // 2
	heldTop   = []float64{1, 1, 1, 0.95}      // >= 8
	missedLow = []float64{0.8, 0.7, 0.5, 0.1} // < 1
)

// TestCapacityRatio: the default's capacity over the best peer's in one
// run, and whether the figure is a ratio, a bound, or a tie the sweep
// could not resolve.
func TestCapacityRatio(t *testing.T) {
	tests := []struct {
		name  string
		sweep *Sweep
		want  float64
		check func(CapacityRatio) bool
	}{
		{"both crossed", duel(crossAt3, crossAt2), 1.5, func(r CapacityRatio) bool { return r.AtLeast+r.AtMost+r.BothHeldTop+r.BothMissedLowest == 0 }},
		// the better of two peers counts: q2 at 3 rather than q1 at 2
		{"best of two peers", duel(crossAt3, crossAt2, crossAt3), 1, func(r CapacityRatio) bool { return r.BestPeers[0] == "q2" }},
		{"the default held the top rate", duel(heldTop, crossAt2), 4, func(r CapacityRatio) bool { return r.AtLeast == 1 }},
		// the peer's capacity is under 1 req/s, so 3 over it is more than 3
		{"the peer missed the lowest rate", duel(crossAt3, missedLow), 3, func(r CapacityRatio) bool { return r.AtLeast == 1 }},
		{"the default missed the lowest rate", duel(missedLow, crossAt2), 0.5, func(r CapacityRatio) bool { return r.AtMost == 1 }},
		{"the peer held the top rate", duel(crossAt2, heldTop), 0.25, func(r CapacityRatio) bool { return r.AtMost == 1 }},
		{"both held the top rate", duel(heldTop, heldTop), 1, func(r CapacityRatio) bool { return r.BothHeldTop == 1 }},
		{"both missed the lowest rate", duel(missedLow, missedLow), 1, func(r CapacityRatio) bool { return r.BothMissedLowest == 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := tt.sweep.CapacityRatio()
			if !ok || !near(r.Median, tt.want) || r.N != 1 || !tt.check(r) {
				t.Errorf("ratio %+v, %v; want %g", r, ok, tt.want)
			}
		})
	}
	if _, ok := shares("d", crossAt3...).CapacityRatio(); ok {
		t.Error("a sweep with no peer has a capacity ratio")
	}
}

// TestCapacityRatioOverRuns: three runs with ratios 1.5, 4 (a lower
// bound) and 1 (both held the top rate) give a median of 1.5, range 1-4,
// a tie; the sentence says so and names each run's best peer.
func TestCapacityRatioOverRuns(t *testing.T) {
	s := duel(crossAt3, crossAt2)
	s.Repeats = []*Sweep{duel(heldTop, crossAt2), duel(heldTop, missedLow, heldTop)}
	r, ok := s.CapacityRatio()
	if !ok || !near(r.Median, 1.5) || !near(r.Min, 1) || !near(r.Max, 4) || !r.Tie() {
		t.Fatalf("ratio %+v, %v; want median 1.5 (1-4), a tie", r, ok)
	}
	got := s.capacityRatioSentence()
	for _, want := range []string{
		"(q1, q1, q2), run by run: 1.50x (1.00-4.00x), a tie",
		"1 run counted as 1 where both held the top swept rate",
		"1 run only a lower bound",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("sentence %q lacks %q", got, want)
		}
	}
	if !strings.Contains(s.Markdown(nil), got) {
		t.Error("the sweep's report lacks the capacity ratio")
	}
}
