package report

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client"
)

func ok(ttft time.Duration, gaps []time.Duration, prompt, cached int) client.Result {
	return client.Result{Status: 200, Started: true, Replica: "r1", TTFT: ttft, E2E: ttft + 100*time.Millisecond, ITL: gaps, PromptTokens: prompt, CachedTokens: cached}
}

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	other := ok(100*ms, []time.Duration{10 * ms, 10 * ms}, 100, 64)
	other.Replica = "r2"
	results := []client.Result{
		other,
		ok(300*ms, []time.Duration{30 * ms}, 100, 0),  // misses the ITL SLO
		ok(2000*ms, []time.Duration{10 * ms}, 50, 32), // misses the TTFT SLO
		{Status: 429, Err: "status 429", Attempts: 6}, // shed
		{Status: 200, Started: true, Err: "stream interrupted"},
		{Status: 400, Err: "status 400: maximum context length", Attempts: 1, Replica: "r1"}, // rejected
		{Status: 502, Err: "status 502: no replica answered", Attempts: 6},                   // shed
	}
	reusable := []int{64, 64, 48, 16, 16, 16, 16}
	s := Summarize("p", results, reusable, SLO{TTFT: time.Second, ITL: 20 * ms}, 2*time.Second)
	want := Summary{
		Policy: "p", Duration: 2 * time.Second, Requests: 7, OK: 3, Rejected: 1, Shed: 2, Interrupted: 1,
		TTFT:    Percentiles{P50: 300, P90: 2000, P99: 2000},
		ITL:     Percentiles{P50: 10, P90: 30, P99: 30},
		E2E:     Percentiles{P50: 400, P90: 2100, P99: 2100},
		Goodput: 0.5, GoodputShare: 1.0 / 7,
		PromptTokens: 250, CachedTokens: 96, CachedShare: 96.0 / 250,
		OracleTokens: 176, OracleHitShare: 96.0 / 176,
		BusiestShare: 2.0 / 3,
	}
	if diff := cmp.Diff(want, s, cmp.AllowUnexported(Summary{}), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ttfts" }, cmp.Ignore())); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if empty := Summarize("e", nil, nil, SLO{}, 0); empty.TTFT.P50 != 0 || empty.OracleHitShare != 0 {
		t.Errorf("empty run: %+v", empty)
	}
}

// TestPredictedExact counts the completed requests whose router-predicted
// cached tokens equal the engine's reported ones, a request with neither
// included, and counts none when no answer reported its cached tokens.
func TestPredictedExact(t *testing.T) {
	answer := func(predicted, cached int, reported bool) client.Result {
		r := ok(0, nil, 100, cached)
		r.PredictedCachedTokens, r.CachedReported = predicted, reported
		return r
	}
	tests := []struct {
		name    string
		results []client.Result
		want    int
	}{
		{"equal, short, over and both none", []client.Result{answer(64, 64, true), answer(32, 64, true), answer(80, 64, true), answer(0, 0, false)}, 2},
		{"a failed request is not counted", []client.Result{answer(64, 64, true), {Status: 502, Err: "status 502", Attempts: 6}}, 1},
		{"no answer reported cached tokens", []client.Result{answer(0, 0, false), answer(16, 0, false)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize("p", tt.results, nil, SLO{}, time.Second)
			if s.PredictedExact != tt.want || s.PredictedExactShare != float64(tt.want)/float64(s.OK) {
				t.Errorf("predicted equals reported on %d (share %v) of %d; want %d", s.PredictedExact, s.PredictedExactShare, s.OK, tt.want)
			}
		})
	}
}

// TestCachedFromEngineCounters: without any answer's
// prompt_tokens_details the summary takes the engines' hits, and with
// one it keeps the answers' own.
func TestCachedFromEngineCounters(t *testing.T) {
	reported := ok(0, nil, 100, 64)
	reported.CachedReported = true
	tests := []struct {
		name       string
		results    []client.Result
		wantFrom   string
		wantCached int
	}{
		{"no answer reported", []client.Result{ok(0, nil, 100, 0), ok(0, nil, 100, 0)}, "engine_counters", 80},
		{"answers reported", []client.Result{reported, ok(0, nil, 100, 0)}, "usage", 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize("p", tt.results, []int{96, 96}, SLO{}, time.Second)
			s.UseEngineHits(80)
			if s.CachedFrom != tt.wantFrom || s.CachedTokens != tt.wantCached ||
				s.CachedShare != float64(tt.wantCached)/200 || s.OracleHitShare != float64(tt.wantCached)/192 {
				t.Errorf("from %q, %d cached, shares %v %v; want %q, %d", s.CachedFrom, s.CachedTokens, s.CachedShare, s.OracleHitShare, tt.wantFrom, tt.wantCached)
			}
		})
	}
}

func TestPercentileRanks(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 200; i++ {
		ds = append(ds, time.Duration(201-i)*time.Millisecond)
	}
	if got := percentiles(ds); got != (Percentiles{P50: 100, P90: 180, P99: 198}) {
		t.Errorf("1..200 ms: got %+v; want p50 100, p90 180, p99 198", got)
	}
}

func sample() *Report {
	ms := time.Millisecond
	slo := SLO{TTFT: time.Second, ITL: 50 * ms}
	rs := []client.Result{ok(40*ms, nil, 100, 80), ok(60*ms, nil, 100, 80)}
	// The answers report their cached tokens; the router predicted the
	// first exactly and the second short.
	rs[0].CachedReported, rs[0].PredictedCachedTokens = true, 80
	rs[1].CachedReported, rs[1].PredictedCachedTokens = true, 64
	slow := []client.Result{ok(400*ms, nil, 100, 0), ok(600*ms, nil, 100, 16)}
	return &Report{
		Command: "llmgw bench -rate 4", Workload: "chat", Setup: "4 shards, 2 routers", Requests: 2, Rate: 4, SLO: slo,
		PromptTokens: 200, ReusableTokens: 160,
		Policies: []Summary{
			Summarize("round-robin", slow, []int{80, 80}, slo, time.Second),
			Summarize("precise", rs, []int{80, 80}, slo, time.Second),
		},
	}
}

func TestMarkdownAndJSON(t *testing.T) {
	r := sample()
	md := r.Markdown([]string{"bench/ttft-cdf.png"})
	for _, want := range []string{
		"Command: `llmgw bench -rate 4`",
		"could reuse 160 of 200 prompt tokens (80.0%)",
		"| precise | 40.0 ms | 60.0 ms |",
		"| 80.0% | 100.0% | 50.0% | 100.0% |",
		"| 8.0% | 10.0% | n/a | 100.0% |",
		"![ttft-cdf](bench/ttft-cdf.png)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	r.Rate = 0
	if md := r.Markdown(nil); !strings.Contains(md, "2 requests on the workload's own schedule") {
		t.Errorf("rate 0 markdown:\n%s", md)
	}
	if got := r.Speedup("precise", "round-robin"); got != 10 {
		t.Errorf("speedup %v; want 10 (400 ms / 40 ms)", got)
	}
	if got := r.Speedup("precise", "absent"); got != 0 {
		t.Errorf("speedup against a missing policy %v; want 0", got)
	}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Policies[1].TTFT.P50 != 40 || back.Policies[1].OracleHitShare != 1 || back.ReusableTokens != 160 {
		t.Errorf("JSON round trip lost figures: %s", b)
	}
}

func TestPlots(t *testing.T) {
	dir := t.TempDir()
	files, err := sample().Plots(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("got %v; want two plots", files)
	}
	for _, f := range files {
		fh, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("%s is not a PNG: %v", f, err)
		}
		if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 300 {
			t.Errorf("%s is %v; want a readable size", f, b)
		}
	}
	if _, err := (&Report{}).Plots(dir); err == nil {
		t.Error("plotting an empty report: no error")
	}
}
