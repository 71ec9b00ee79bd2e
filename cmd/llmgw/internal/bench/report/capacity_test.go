package report

import (
	"strings"
	"testing"
)

// shares is a sweep over rates 1, 2, 4, 8 where policy p served the given
// shares of its requests within the SLO, with goodput rate x share, TTFT
// p90 100 x rate ms and 90% of the oracle.
func shares(p string, s ...float64) *Sweep {
	sw := &Sweep{Workload: "w", Baseline: "round-robin", Default: p}
	for i, rate := range []float64{1, 2, 4, 8}[:len(s)] {
		sw.Rates = append(sw.Rates, Report{Rate: rate, Policies: []Summary{{Policy: p, Requests: 100, GoodputShare: s[i],
			Goodput: rate * s[i], TTFT: Percentiles{P90: Millis(100 * rate)}, OracleHitShare: 0.9}}})
	}
	return sw
}

// TestCapacity: the capacity is interpolated between the last rate that
// met the SLO for 90% of requests and the first that did not.
func TestCapacity(t *testing.T) {
	tests := []struct {
		name   string
		shares []float64
		want   Capacity
	}{
		// 0.95 at 2, 0.85 at 4: 2 + (0.95 - 0.9)/(0.95 - 0.85) x (4 - 2) = 3
		{"crosses", []float64{1, 0.95, 0.85, 0.5}, Capacity{Rate: 3}},
		// exactly 0.9 counts as meeting it: 2 + 0/0.2 x 2 = 2
		{"exactly at the share", []float64{1, 0.9, 0.7, 0.5}, Capacity{Rate: 2}},
		// the first crossing counts: 1 + 0.05/0.1 x 1 = 1.5, not the recovery at 4
		{"recovers", []float64{0.95, 0.85, 0.95, 0.95}, Capacity{Rate: 1.5}},
		{"never misses", []float64{1, 1, 0.95, 0.92}, Capacity{Rate: 8, Above: true}},
		{"always misses", []float64{0.8, 0.7, 0.5, 0.1}, Capacity{Below: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := shares("p", tc.shares...).Capacity("p")
			if !ok || got.Below != tc.want.Below || got.Above != tc.want.Above || !near(got.Rate, tc.want.Rate) {
				t.Errorf("capacity %+v, %v; want %+v", got, ok, tc.want)
			}
		})
	}
	if _, ok := shares("p", 1).Capacity("q"); ok {
		t.Error("a policy that never ran has a capacity")
	}
}

// TestCapacitiesOverRepeats: three repeats with capacities 3, 2 and 4 req/s
// give a median of 3 (range 2-4); the other figures are the repeats' at 2
// req/s, the highest swept rate within 3: goodput 2 x 0.95, 2 x 0.9 and
// 2 x 1 req/s, median 1.9.
func TestCapacitiesOverRepeats(t *testing.T) {
	repeats := []*Sweep{
		shares("p", 1, 0.95, 0.85, 0.5), // 3
		shares("p", 1, 0.9, 0.7, 0.5),   // 2
		shares("p", 1, 1, 0.9, 0.5),     // 4 + 0/0.4 x 4 = 4
	}
	rows := Capacities(repeats...)
	if len(rows) != 1 {
		t.Fatalf("%d rows; want 1", len(rows))
	}
	r := rows[0]
	if c := r.Capacity; !near(c.Median, 3) || !near(c.Min, 2) || !near(c.Max, 4) || c.N != 3 || r.At != 2 {
		t.Errorf("capacity %+v at %g; want median 3 (2-4) of 3, at 2", r.Capacity, r.At)
	}
	if !near(r.Goodput.Median, 1.9) || !near(r.Goodput.Min, 1.8) || !near(r.Goodput.Max, 2) || r.TTFTP90.Median != 200 {
		t.Errorf("goodput %+v, TTFT p90 %+v; want median 1.9 (1.8-2), 200 ms", r.Goodput, r.TTFTP90)
	}
	var b strings.Builder
	writeCapacity(&b, true, repeats...)
	if want := "| p | 3 req/s (2-4 req/s) | 1.00 | 1.90 (1.80-2.00) | 3.40 (2.80-3.60) | 4.00 | 2/s | 200.0 ms | 90.0% |"; !strings.Contains(b.String(), want) {
		t.Errorf("table:\n%s\nwant the row %q", b.String(), want)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestCapacityLowerBound: where the median run met the SLO at the highest
// swept rate, the table marks the median as a lower bound; where only one
// of three did, the median is a crossing and is not marked.
func TestCapacityLowerBound(t *testing.T) {
	tests := []struct {
		name    string
		repeats []*Sweep
		want    string
	}{
		{"two of three held the top rate", []*Sweep{
			shares("p", 1, 1, 1, 1), shares("p", 1, 1, 1, 0.95), shares("p", 1, 0.95, 0.85, 0.5),
		}, "| p | >= 8 req/s (3-8 req/s) |"},
		{"one of three held it", []*Sweep{
			shares("p", 1, 1, 1, 1), shares("p", 1, 0.95, 0.85, 0.5), shares("p", 1, 0.9, 0.7, 0.5),
		}, "| p | 3 req/s (2-8 req/s) |"},
		{"every run held it", []*Sweep{shares("p", 1, 1, 1, 1)}, "| p | >= 8 req/s |"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeCapacity(&b, false, tt.repeats...)
			if !strings.Contains(b.String(), tt.want) {
				t.Errorf("table:\n%s\nwant the row to start %q", b.String(), tt.want)
			}
		})
	}
}
