package report

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
)

// threeRuns is sampleSweep run three times: the default's goodput at
// 4 req/s is 3, 3.3 and 2.7, dynamo's at 2 req/s 2.2, 1.9 and 2.3 against
// the default's 2 throughout, and the third run sent late at 8 req/s.
func threeRuns() *Sweep {
	s := sampleSweep()
	s.Seed = 1
	r2, r3 := sampleSweep(), sampleSweep()
	r2.Seed, r3.Seed = 2, 3
	r2.Rates[2].Policies[1].Goodput = 3.3
	r3.Rates[2].Policies[1].Goodput = 2.7
	r2.Rates[1].Policies[2].Goodput = 1.9
	r3.Rates[1].Policies[2].Goodput = 2.3
	r3.Rates[3].Policies[0].SendLag.P99 = 80
	s.Repeats = []*Sweep{r2, r3}
	return s
}

func TestSweepMedian(t *testing.T) {
	m := threeRuns().Median()
	if got := len(m.Runs()); got != 3 {
		t.Fatalf("median of %d runs; want 3", got)
	}
	if g := m.Rates[2].Policies[1].Goodput; g != 3 {
		t.Errorf("default's median goodput at 4 req/s %g; want 3 (of 3, 3.3, 2.7)", g)
	}
	if g := m.Rates[1].Policies[2].Goodput; g != 2.2 {
		t.Errorf("dynamo's median goodput at 2 req/s %g; want 2.2 (of 2.2, 1.9, 2.3)", g)
	}
	if lag := m.Rates[3].Policies[0].SendLag.P99; lag != 80 {
		t.Errorf("send lag p99 %v; want the worst run's 80 ms", lag)
	}
	sp := m.spreadAt(2, "precise-prefix", func(p Summary) float64 { return p.Goodput })
	if sp != (Spread{Median: 3, Min: 2.7, Max: 3.3, N: 3}) {
		t.Errorf("spread %+v; want 3 (2.7-3.3) over 3", sp)
	}
	if one := sampleSweep(); one.Median() != one {
		t.Error("a sweep run once is its own median")
	}
}

func TestSweepRepeatsVerdict(t *testing.T) {
	// A sweep with repeats is judged on its medians: with the first run's
	// 3.6 at the knee the median of 3.6, 3.3 and 2.7 is 3.3.
	first := threeRuns()
	first.Rates[2].Policies[1].Goodput = 3.6
	if g := first.Verdict().Goodput; g != 3.3 {
		t.Errorf("the default's goodput at the knee %g; want the median 3.3", g)
	}
	v := threeRuns().Median().Verdict()
	// On the median dynamo leads at 2 req/s by 10% (over the 5% noise),
	// but in the second run it trailed: a tie, not a win.
	if len(v.Wins) != 0 || len(v.Ties) != 1 || v.Ties[0].Peer != "dynamo" || v.Ties[0].Rate != 2 {
		t.Errorf("wins %+v, ties %+v; want no win and dynamo's tie at 2 req/s", v.Wins, v.Ties)
	}
	// At the knee the default leads sglang (2.5) in every run: 1.2, 1.32, 1.08.
	if r := v.RatioSpread; r.N != 3 || r.Tie() || math.Abs(r.Min-1.08) > 1e-9 || math.Abs(r.Max-1.32) > 1e-9 {
		t.Errorf("ratio at the knee %+v; want 1.08-1.32 over 3 runs, no tie", r)
	}
	md := threeRuns().Markdown(nil)
	for _, want := range []string{
		"3 runs, the workload seeded 1, 2, 3; the figures are their medians.",
		"| the knee, 4 req/s | sglang | 2.50 req/s | 3.00 req/s | 1.20x (1.08-1.32) | 93.0% |",
		"ahead on the median but not in every run (ties): dynamo at 2/s (2.20 vs 2.00 req/s)",
		"| 4 | precise-prefix | 225.0 ms | 405.0 ms | 450.0 ms | 0.0 ms | 3.00 req/s (2.70-3.30 req/s) (",
		"every figure the median (range) over 3 runs",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestSweepRepeatsJSON: a sweep.json with repeats renders as the sweep it
// was written from.
func TestSweepRepeatsJSON(t *testing.T) {
	s := threeRuns()
	js, err := s.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Sweep
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Repeats) != 2 || back.Repeats[1].Seed != 3 {
		t.Fatalf("read back %d repeats; want 2, the last seeded 3", len(back.Repeats))
	}
	if got, want := back.Markdown(nil), s.Markdown(nil); got != want {
		t.Errorf("rendered from JSON:\n%s\nwant:\n%s", got, want)
	}
}

// TestP90NotRecorded: a sweep written before reports kept the TTFT p90
// says so rather than showing 0 ms.
func TestP90NotRecorded(t *testing.T) {
	s := sampleSweep()
	for i := range s.Rates {
		for j := range s.Rates[i].Policies {
			s.Rates[i].Policies[j].TTFT.P90, s.Rates[i].Policies[j].GoodputShare = 0, 1
		}
	}
	md := s.Markdown(nil)
	if !strings.Contains(md, "| precise-prefix | >= 8 req/s | 1.00 | 2.00 | 3.00 | 2.00 | 8/s | not recorded | 90.0% |") ||
		!strings.Contains(md, "| 1 | precise-prefix | 100.0 ms | not recorded | 200.0 ms |") {
		t.Errorf("markdown shows a p90 it does not have:\n%s", md)
	}
}

// TestSweepCopies: the prefix copies' median is over the runs that read
// them, a policy no run read shows "-", and a count of 0 (a policy that
// has no replicator) shows 0, not "-".
func TestSweepCopies(t *testing.T) {
	n := func(v int) *int { return &v }
	s := threeRuns()
	runs := s.Runs()
	runs[0].Rates[2].Policies[1].Copies = n(4)
	runs[2].Rates[2].Policies[1].Copies = n(7)
	for _, r := range runs {
		r.Rates[2].Policies[0].Copies = n(0)
	}
	m := s.Median()
	if got := m.Rates[2].Policies[1].Copies; got == nil || *got != 6 {
		t.Errorf("default's median copies %v; want 6 (of 4, 7; one run unread)", got)
	}
	if got := m.Rates[2].Policies[2].Copies; got != nil {
		t.Errorf("dynamo's copies %d; want none read", *got)
	}
	md := m.Markdown(nil)
	for policy, want := range map[string]string{"round-robin": "0", "precise-prefix": "6", "dynamo": "-"} {
		if got := rateCell(md, 4, policy, "prefix copies"); got != want {
			t.Errorf("%s's prefix copies at 4 req/s read %q; want %q:\n%s", policy, got, want, md)
		}
	}
}

// rateCell is the cell under column in the per-rate table's row for
// (rate, policy), "" when there is none.
func rateCell(md string, rate float64, policy, column string) string {
	var cols []string
	for _, line := range strings.Split(md, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) > 2 && cells[0] == "rate" && cells[1] == "policy" {
			cols = cells
			continue
		}
		if cols == nil || len(cells) != len(cols) || cells[0] != strconv.FormatFloat(rate, 'g', -1, 64) || cells[1] != policy {
			continue
		}
		for i, c := range cols {
			if c == column {
				return cells[i]
			}
		}
	}
	return ""
}
