package report

import (
	"slices"
)

// A sweep run more than once (`llmgw bench -runs N`, each run on its own
// seed) is reported on its median: every figure of every policy at every
// rate is the median over the runs, and the figures a comparison rests on
// (goodput, TTFT p90, share of the oracle, and the default's goodput over
// each peer's) carry their range. A comparison whose range of ratios
// holds 1 is a tie: one seed's luck decided it.

// Runs are the sweep and its repeats, the first run first (on a Median
// view, the runs it summarises).
func (s *Sweep) Runs() []*Sweep {
	if s.runs != nil {
		return s.runs
	}
	return append([]*Sweep{s}, s.Repeats...)
}

// Median is the sweep as its report shows it: s itself when it ran once;
// otherwise a sweep whose figures are the medians over s.Runs() (the send
// lag the worst run's, so that a host-limited run is never hidden), and
// whose spreads and verdict read the runs. The rates and policies are the
// first run's; a repeat lacking one is left out of its median.
func (s *Sweep) Median() *Sweep {
	if len(s.Repeats) == 0 || s.runs != nil {
		return s
	}
	m := *s
	m.Repeats, m.runs = nil, s.Runs()
	m.Rates = slices.Clone(s.Rates)
	for i, r := range s.Rates {
		at := &m.Rates[i]
		at.Policies = make([]Summary, len(r.Policies))
		for j, p := range r.Policies {
			at.Policies[j] = medianSummary(summariesAt(m.runs, r.Rate, p.Policy))
		}
		var loads []float64
		for _, run := range m.runs {
			if i < len(run.Rates) {
				loads = append(loads, run.Rates[i].HostLoad)
			}
		}
		at.HostLoad = spreadOf(loads).Median
	}
	return &m
}

// policyAt is the named policy's summary in s's report at rate.
func (s *Sweep) policyAt(rate float64, policy string) (Summary, bool) {
	for i := range s.Rates {
		if s.Rates[i].Rate == rate {
			return s.Rates[i].policy(policy)
		}
	}
	return Summary{}, false
}

// summariesAt are the named policy's summaries at rate over runs (a run
// that did not sweep the rate, or not the policy there, adds none).
func summariesAt(runs []*Sweep, rate float64, policy string) []Summary {
	var out []Summary
	for _, run := range runs {
		if p, ok := run.policyAt(rate, policy); ok {
			out = append(out, p)
		}
	}
	return out
}

// spreadOver is one figure of the named policy at rate over runs.
func spreadOver(runs []*Sweep, rate float64, policy string, f func(Summary) float64) Spread {
	var xs []float64
	for _, p := range summariesAt(runs, rate, policy) {
		xs = append(xs, f(p))
	}
	return spreadOf(xs)
}

// spreadAt is one figure of the named policy at Rates[i] over the runs.
func (s *Sweep) spreadAt(i int, policy string, f func(Summary) float64) Spread {
	return spreadOver(s.Runs(), s.Rates[i].Rate, policy, f)
}

// ratioAt is the default's goodput over peer's at Rates[i], run by run:
// its median and range. A run where the peer had no goodput counts the
// default as far ahead (a large ratio) unless the default had none either
// (a tie, 1).
func (s *Sweep) ratioAt(i int, peer string) Spread {
	var xs []float64
	for _, run := range s.Runs() {
		d, okd := run.policyAt(s.Rates[i].Rate, s.Default)
		p, okp := run.policyAt(s.Rates[i].Rate, peer)
		if okd && okp {
			xs = append(xs, goodputRatio(d.Goodput, p.Goodput))
		}
	}
	return spreadOf(xs)
}

// noRatioCap stands for a ratio over a peer with no goodput at all.
const noRatioCap = 99

func goodputRatio(def, peer float64) float64 {
	switch {
	case peer > 0:
		return def / peer
	case def > 0:
		return noRatioCap
	}
	return 1
}

// Tie reports whether a ratio's spread holds 1: over repeated runs the
// comparison went both ways (or was level), so neither side is ahead.
func (s Spread) Tie() bool {
	return s.N > 1 && s.Min <= 1 && s.Max >= 1
}

// medianSummary is the field-wise median of ps (which share a policy):
// counts and shares, latencies and goodput; the send lag is the worst.
func medianSummary(ps []Summary) Summary {
	if len(ps) == 0 {
		return Summary{}
	}
	m := ps[0]
	med := func(f func(Summary) float64) float64 {
		xs := make([]float64, len(ps))
		for i, p := range ps {
			xs[i] = f(p)
		}
		return spreadOf(xs).Median
	}
	medInt := func(f func(Summary) int) int {
		return int(med(func(p Summary) float64 { return float64(f(p)) }) + 0.5)
	}
	medPct := func(f func(Summary) Percentiles) Percentiles {
		return Percentiles{
			P50: Millis(med(func(p Summary) float64 { return float64(f(p).P50) })),
			P90: Millis(med(func(p Summary) float64 { return float64(f(p).P90) })),
			P99: Millis(med(func(p Summary) float64 { return float64(f(p).P99) })),
		}
	}
	m.OK = medInt(func(p Summary) int { return p.OK })
	m.Rejected = medInt(func(p Summary) int { return p.Rejected })
	m.Shed = medInt(func(p Summary) int { return p.Shed })
	m.Interrupted = medInt(func(p Summary) int { return p.Interrupted })
	m.TTFT = medPct(func(p Summary) Percentiles { return p.TTFT })
	m.ITL = medPct(func(p Summary) Percentiles { return p.ITL })
	m.E2E = medPct(func(p Summary) Percentiles { return p.E2E })
	m.Goodput = med(func(p Summary) float64 { return p.Goodput })
	m.GoodputShare = med(func(p Summary) float64 { return p.GoodputShare })
	m.CachedShare = med(func(p Summary) float64 { return p.CachedShare })
	m.OracleHitShare = med(func(p Summary) float64 { return p.OracleHitShare })
	m.BusiestShare = med(func(p Summary) float64 { return p.BusiestShare })
	m.PredictedExactShare = med(func(p Summary) float64 { return p.PredictedExactShare })
	m.Copies = medianCount(ps, func(p Summary) *int { return p.Copies })
	m.SendLag.P50 = Millis(med(func(p Summary) float64 { return float64(p.SendLag.P50) }))
	m.SendLag.P99 = slices.MaxFunc(ps, func(a, b Summary) int { return cmpMillis(a.SendLag.P99, b.SendLag.P99) }).SendLag.P99
	return m
}

// medianCount is the median of the counts ps have (rounded half up), nil
// when none has one.
func medianCount(ps []Summary, f func(Summary) *int) *int {
	var xs []float64
	for _, p := range ps {
		if n := f(p); n != nil {
			xs = append(xs, float64(*n))
		}
	}
	if len(xs) == 0 {
		return nil
	}
	n := int(spreadOf(xs).Median + 0.5)
	return &n
}

func cmpMillis(a, b Millis) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
