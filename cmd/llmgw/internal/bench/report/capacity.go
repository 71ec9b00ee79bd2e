package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// SLOShare is the share of its requests a policy must serve within the
// SLO at a rate for the rate to be within its capacity: capacity at the
// SLO is the highest arrival rate at which at least 90% of requests meet
// it, the figure operators size fleets by.
const SLOShare = 0.9

// Capacity is one policy's capacity at the SLO in one sweep, read from
// its swept rates: the rates are walked upwards until the first whose
// share of requests within the SLO (GoodputShare) falls under SLOShare,
// and the capacity is interpolated linearly in rate between that rate and
// the one before it, where the share crossed SLOShare. A later rate that
// meets the SLO again does not count (the sweep saw the policy fail
// below it).
type Capacity struct {
	Rate float64
	// Below: even the lowest rate missed (Rate is 0); Above: the highest
	// still met it, so Rate, that rate, is only a lower bound.
	Below, Above bool
}

// Capacity is the named policy's capacity at the SLO; false when the
// policy ran at no rate.
func (s *Sweep) Capacity(policy string) (Capacity, bool) {
	prevRate, prevShare, ran := 0.0, 0.0, false
	for _, r := range s.Rates {
		p, ok := r.policy(policy)
		if !ok {
			continue
		}
		if p.GoodputShare < SLOShare {
			if !ran {
				return Capacity{Below: true}, true
			}
			f := (prevShare - SLOShare) / (prevShare - p.GoodputShare)
			return Capacity{Rate: prevRate + f*(r.Rate-prevRate)}, true
		}
		prevRate, prevShare, ran = r.Rate, p.GoodputShare, true
	}
	return Capacity{Rate: prevRate, Above: true}, ran
}

// Spread is a figure's median and range over repeated sweeps.
type Spread struct {
	Median, Min, Max float64
	N                int
}

func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	xs = slices.Sorted(slices.Values(xs))
	n := len(xs)
	return Spread{Median: (xs[(n-1)/2] + xs[n/2]) / 2, Min: xs[0], Max: xs[n-1], N: n}
}

// String is the median with the range when there is more than one value.
func (s Spread) String() string { return s.Format(figure, "") }

// Format is the median with the range when there is more than one value,
// each number written by f, and unit once after each: "2130 ms
// (1982-2143 ms)".
func (s Spread) Format(f func(float64) string, unit string) string {
	if s.N > 1 && s.Max > s.Min {
		return fmt.Sprintf("%s%s (%s-%s%s)", f(s.Median), unit, f(s.Min), f(s.Max), unit)
	}
	return f(s.Median) + unit
}

// figure is x to three significant digits, without an exponent for the
// milliseconds and rates the reports hold.
func figure(x float64) string {
	if math.Abs(x) >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

// CapacityRow is one policy's capacity over repeats of a sweep (the same
// workload and rates, other seeds), beside its goodput, TTFT p90 and share
// of the oracle at the highest swept rate within its median capacity (At;
// 0 when even the lowest rate is past it).
type CapacityRow struct {
	Policy string
	// Capacity spreads the repeats' capacities; Below and Above count the
	// repeats whose capacity lay outside the swept rates (a Below counts
	// as 0, an Above as the highest rate).
	Capacity     Spread
	Below, Above int
	At           float64
	Goodput      Spread // req/s
	TTFTP90      Spread // ms
	OracleShare  Spread
	// GoodputAt is the goodput at each of the first sweep's rates, over
	// the repeats (N 0 where the policy did not run at that rate).
	GoodputAt []Spread
}

// Capacities are the capacity rows of every policy the sweeps ran, in the
// order the first sweep ran them.
func Capacities(sweeps ...*Sweep) []CapacityRow {
	if len(sweeps) == 0 {
		return nil
	}
	var rows []CapacityRow
	for _, name := range sweeps[0].policies() {
		row := CapacityRow{Policy: name}
		var caps []float64
		for _, s := range sweeps {
			c, ok := s.Capacity(name)
			if !ok {
				continue
			}
			caps = append(caps, c.Rate)
			row.Below += b2i(c.Below)
			row.Above += b2i(c.Above)
		}
		row.Capacity = spreadOf(caps)
		for _, s := range sweeps {
			for _, r := range s.Rates {
				if _, ok := r.policy(name); ok && r.Rate <= row.Capacity.Median {
					row.At = max(row.At, r.Rate)
				}
			}
		}
		goodput := func(p Summary) float64 { return p.Goodput }
		row.Goodput = spreadOver(sweeps, row.At, name, goodput)
		row.TTFTP90 = spreadOver(sweeps, row.At, name, func(p Summary) float64 { return float64(p.TTFT.P90) })
		row.OracleShare = spreadOver(sweeps, row.At, name, func(p Summary) float64 { return p.OracleHitShare })
		for _, at := range sweeps[0].Rates {
			row.GoodputAt = append(row.GoodputAt, spreadOver(sweeps, at.Rate, name, goodput))
		}
		rows = append(rows, row)
	}
	return rows
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeCapacity writes the capacity table of the sweeps (one, or
// repeats): per policy its capacity at the SLO, its goodput at every
// swept rate, and its TTFT p90 and share of the oracle at the highest
// rate within its capacity, each the median and range over the repeats.
// The paragraph defining the figures comes first when explain is set (a
// docs/BENCHMARKS.md section relies on the file's own definition, said
// once for every sweep).
func writeCapacity(b *strings.Builder, explain bool, sweeps ...*Sweep) {
	if explain {
		fmt.Fprintf(b, "Capacity at the SLO: the highest arrival rate at which at least %.0f%% of requests met it, interpolated linearly "+
			"between the swept rates where the share crossed %.0f%% (\">=\" where the median run still met it at the top swept rate)", 100*SLOShare, 100*SLOShare)
		if len(sweeps) > 1 {
			fmt.Fprintf(b, "; every figure the median (range) over %d runs", len(sweeps))
		}
		b.WriteString(". Goodput at each swept rate; TTFT p90 and share of the oracle at the highest swept rate within the capacity (at).\n\n")
	}
	b.WriteString("| policy | capacity at SLO |")
	for _, r := range sweeps[0].Rates {
		fmt.Fprintf(b, " goodput at %g/s |", r.Rate)
	}
	b.WriteString(" at | TTFT p90 | of oracle |\n|---|---:|")
	b.WriteString(strings.Repeat("---:|", len(sweeps[0].Rates)+3) + "\n")
	top := sweeps[0].Rates[len(sweeps[0].Rates)-1].Rate
	for _, r := range Capacities(sweeps...) {
		capacity := r.Capacity.Format(figure, " req/s")
		switch {
		case r.Below == r.Capacity.N:
			capacity = "below the lowest rate"
		case r.Above > 0 && r.Capacity.Median >= top:
			// The median run still met the SLO at the highest rate:
			// the median is a lower bound.
			capacity = ">= " + capacity
		}
		fmt.Fprintf(b, "| %s | %s |", r.Policy, capacity)
		for _, g := range r.GoodputAt {
			if g.N == 0 {
				b.WriteString(" |")
				continue
			}
			fmt.Fprintf(b, " %s |", g.Format(hundredths, ""))
		}
		if r.At == 0 {
			b.WriteString(" | | |\n")
			continue
		}
		fmt.Fprintf(b, " %g/s | %s | %s |\n", r.At, p90Spread(r.TTFTP90), pctSpread(r.OracleShare))
	}
	b.WriteString("\n")
}

// pctSpread is a spread of shares as percentages.
func pctSpread(s Spread) string {
	return Spread{Median: 100 * s.Median, Min: 100 * s.Min, Max: 100 * s.Max, N: s.N}.Format(tenths, "%")
}

// p90Spread is a spread of TTFT p90s in milliseconds; reports written
// before they recorded the p90 read 0, shown as not recorded.
func p90Spread(s Spread) string {
	if s.Max == 0 {
		return "not recorded"
	}
	return s.Format(tenths, " ms")
}

// tenths is a figure with one decimal, as one run's shares and
// milliseconds show.
func tenths(x float64) string { return fmt.Sprintf("%.1f", x) }

// hundredths is a figure with two decimals, as one run's goodput shows.
func hundredths(x float64) string { return fmt.Sprintf("%.2f", x) }
