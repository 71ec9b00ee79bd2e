package report

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client"
)

// point is one policy's summary at one rate with the figures the verdict
// reads set directly.
func point(policy string, goodput, oracle float64, ttftP99 Millis, shed int) Summary {
	return Summary{Policy: policy, Goodput: goodput, OracleHitShare: oracle, TTFT: Percentiles{P50: ttftP99 / 2, P90: ttftP99 * 9 / 10, P99: ttftP99}, Shed: shed, Requests: 10}
}

func sampleSweep() *Sweep {
	slo := SLO{TTFT: 500 * time.Millisecond, ITL: 50 * time.Millisecond}
	at := func(rate float64, ps ...Summary) Report {
		return Report{Workload: "fan-out", Rate: rate, Requests: 10, PromptTokens: 1000, ReusableTokens: 900, Policies: ps, HostLoad: 1.5}
	}
	return &Sweep{Command: "llmgw bench -rates 1,2,4", Workload: "fan-out", Setup: "8 shards", SLO: slo,
		Baseline: "round-robin", Default: "precise-prefix", Noise: 0.05,
		Rates: []Report{
			at(1, point("round-robin", 1, 0.5, 300, 0), point("precise-prefix", 1, 0.97, 200, 0), point("dynamo", 1, 0.9, 250, 0)),
			at(2, point("round-robin", 1.5, 0.5, 400, 0), point("precise-prefix", 2, 0.96, 300, 0), point("dynamo", 2.2, 0.9, 280, 0)),
			// round-robin's p99 passes the SLO here: the knee.
			at(4, point("round-robin", 1, 0.4, 900, 0), point("precise-prefix", 3, 0.93, 450, 0), point("dynamo", 2, 0.8, 700, 0),
				point("sglang", 2.5, 0.8, 600, 0)),
			at(8, point("round-robin", 0.5, 0.3, 2000, 3), point("precise-prefix", 2, 0.9, 900, 0), point("dynamo", 1, 0.7, 1500, 1)),
		}}
}

func TestSweepKnee(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Sweep)
		want int
	}{
		{"TTFT p99 over the SLO", func(*Sweep) {}, 2},
		{"shedding", func(s *Sweep) { s.Rates[1].Policies[0].Shed = 1 }, 1},
		{"never saturated", func(s *Sweep) { s.Rates = s.Rates[:2] }, -1},
		{"no baseline run", func(s *Sweep) { s.Baseline = "absent" }, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sampleSweep()
			tt.edit(s)
			if got := s.Knee(); got != tt.want {
				t.Errorf("knee %d; want %d", got, tt.want)
			}
		})
	}
}

func TestSweepVerdict(t *testing.T) {
	v := sampleSweep().Verdict()
	if v.Rate != 4 || !v.Saturated || v.BestPeer != "sglang" || v.BestPeerGoodput != 2.5 || v.Goodput != 3 || v.Ratio != 3/2.5 {
		t.Errorf("at the knee: %+v; want rate 4, best peer sglang 2.5 against 3", v)
	}
	// dynamo (700 ms) and sglang (600 ms) both pass the 500 ms SLO at 4.
	if p := v.Peers; !v.PeersSaturated || p.Rate != 4 || p.BestPeer != "sglang" {
		t.Errorf("at the peers' knee: %+v (saturated %v); want rate 4, best peer sglang", p, v.PeersSaturated)
	}
	if h := v.Highest; h.Rate != 8 || h.BestPeer != "dynamo" || h.Ratio != 2 {
		t.Errorf("at the highest rate: %+v; want dynamo at 8 req/s, the default 2x its goodput", h)
	}
	if v.OracleShare != 0.93 || v.MinUnsaturatedOracleShare != 0.96 || v.UnsaturatedRates != 2 {
		t.Errorf("oracle shares: %+v; want 0.93 at the knee, lowest 0.96 over the two rates below it", v)
	}
	// dynamo's 2.2 at rate 2 beats 2 by 10% > the 5% noise.
	if len(v.Wins) != 1 || v.Wins[0] != (Win{Rate: 2, Peer: "dynamo", Goodput: 2.2, Versus: 2}) {
		t.Errorf("wins %+v; want dynamo at 2 req/s only", v.Wins)
	}
	s := sampleSweep()
	s.Peers = []string{"sglang"} // dynamo is then a variant, not a peer
	if v := s.Verdict(); len(v.Wins) != 0 || v.BestPeer != "sglang" {
		t.Errorf("with peers listed: %+v; want sglang the best peer and no win", v)
	}
	s.Peers = nil
	s.Noise = 0.2
	if w := s.Verdict().Wins; len(w) != 0 {
		t.Errorf("wins within a 20%% noise: %+v", w)
	}
	s.Rates = s.Rates[:2]
	if v := s.Verdict(); v.Saturated || v.Rate != 2 || v.UnsaturatedRates != 2 || v.PeersSaturated {
		t.Errorf("unsaturated sweep: %+v; want the highest rate's figures, every rate unsaturated", v)
	}
	if v := (&Sweep{}).Verdict(); v.Rate != 0 || v.BestPeer != "" {
		t.Errorf("empty sweep: %+v", v)
	}
}

func TestSweepMarkdownAndPlot(t *testing.T) {
	s := sampleSweep()
	s.Rates[3].Policies[1].SendLag = Percentiles{P99: 120}
	md := s.Markdown([]string{"bench/sweep-fan-out/sweep.png"})
	for _, want := range []string{
		"Command: `llmgw bench -rates 1,2,4`",
		"10 requests at each of 1, 2, 4, 8 req/s; 8 shards.",
		"| the knee, 4 req/s | sglang | 2.50 req/s | 3.00 req/s | 1.20x | 93.0% |\n",
		"| the highest rate, 8 req/s | dynamo | 1.00 req/s | 2.00 req/s | 2.00x | 90.0% |\n",
		"below the knee: 96.0%. Peers ahead of the default at any rate: dynamo at 2/s (2.20 vs 2.00 req/s).",
		"Host-limited runs (the client sent late, send lag p99 over 50ms): precise-prefix at 8/s (send lag p99 120.0 ms).",
		"| 8 | round-robin | 1000.0 ms | 1800.0 ms | 2000.0 ms |",
		"could reuse 90.0%, 90.0%, 90.0%, 90.0% of the prompt tokens at these rates.",
		"![sweep](bench/sweep-fan-out/sweep.png)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// With dynamo within the SLO at 4 req/s, the peers' knee is 8 req/s,
	// the highest rate, which gets one row.
	s.Rates[2].Policies[2].TTFT.P99 = 400
	md = s.Markdown(nil)
	if want := "| the peers' knee, 8 req/s | dynamo | 1.00 req/s | 2.00 req/s | 2.00x | 90.0% |\n"; !strings.Contains(md, want) || strings.Contains(md, "the highest rate") {
		t.Errorf("markdown lacks %q or still has a highest-rate row:\n%s", want, md)
	}
	file := filepath.Join(t.TempDir(), SweepPlot)
	if err := s.Plot(file); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	img, err := png.Decode(fh)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 300 {
		t.Errorf("plot is %v; want two readable panels", b)
	}
	if err := (&Sweep{}).Plot(file); err == nil {
		t.Error("plotting an empty sweep: no error")
	}
}

func TestSendLag(t *testing.T) {
	ms := time.Millisecond
	results := []client.Result{
		{Status: 200, Attempts: 1, Sent: 105 * ms},
		{Status: 200, Attempts: 1, Sent: 200 * ms}, // early by the clock's grain: 0
		{Status: 200, Attempts: 1, Sent: 900 * ms}, // waited for another request: skipped
		{Err: "not sent: context canceled"},        // never sent: skipped
		{Status: 200, Attempts: 1, Sent: 460 * ms},
	}
	got := SendLag([]time.Duration{100 * ms, 201 * ms, -1, 300 * ms, 400 * ms}, results)
	if got != (Percentiles{P50: 5, P90: 60, P99: 60}) {
		t.Errorf("send lag %+v; want p50 5 ms, p90 60 ms, p99 60 ms", got)
	}
	s := Summary{SendLag: got}
	if !s.HostLimited() {
		t.Error("a 60 ms p99 lag is not reported as host-limited")
	}
}
