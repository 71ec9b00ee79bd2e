package report

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Report is one bench run: the setup, the oracle's bound and one summary
// per policy, in the order they ran.
type Report struct {
	// Command is the exact command line that produced the report.
	Command string `json:"command"`
	Provenance
	Workload string `json:"workload"`
	// Setup describes the fleet and the workload's parameters in words.
	Setup    string  `json:"setup"`
	Requests int     `json:"requests"`
	Rate     float64 `json:"rate_rps"`
	SLO      SLO     `json:"slo"`
	// PromptTokens and ReusableTokens are the workload's totals; the
	// oracle could serve ReusableTokens of PromptTokens from cache.
	PromptTokens   int       `json:"prompt_tokens"`
	ReusableTokens int       `json:"oracle_reusable_tokens"`
	Policies       []Summary `json:"policies"`
	// HostLoad is the host's 1-minute load average when the last policy
	// ended (0 where unknown): the machine is shared, its load distorts
	// latencies.
	HostLoad float64 `json:"host_load_1m"`
}

// JSON is the report as indented JSON. A report without its provenance
// gets it here (see Provenance.fill).
func (r *Report) JSON() ([]byte, error) {
	r.Provenance.fill(time.Now())
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return append(b, '\n'), nil
}

// Markdown renders the report as a section of docs/BENCHMARKS.md: its
// provenance line, the setup and the table. plots are image paths
// relative to that file, shown below the table.
func (r *Report) Markdown(plots []string) string {
	var b strings.Builder
	r.Provenance.fill(time.Now())
	b.WriteString(r.line(r.Command, loadConditions(r.Machine, []float64{r.HostLoad}, "the run")))
	b.WriteString("\n")
	pace := fmt.Sprintf("at %g req/s", r.Rate)
	if r.Rate <= 0 {
		pace = "on the workload's own schedule"
	}
	fmt.Fprintf(&b, "Workload `%s`: %d requests %s; %s.\n", r.Workload, r.Requests, pace, r.Setup)
	fmt.Fprintf(&b, "The oracle (an infinite cache shared by the fleet, the last prompt token recomputed) could reuse %d of %d prompt tokens (%s).\n",
		r.ReusableTokens, r.PromptTokens, pct(float64(r.ReusableTokens)/float64(max(r.PromptTokens, 1))))
	fmt.Fprintf(&b, "Goodput counts requests with TTFT <= %s and mean inter-token gap <= %s; \"predicted = reported\" is the share of completed requests whose cached tokens the router predicted exactly as the engine reported them in the answer's usage; \"busiest replica\" is the share of requests the most used replica served; \"prefix copies\" the prompts the routers sent on their own to copy a hot prefix to an idle replica (- where not read); \"rejected\" were refused as invalid (4xx, e.g. a prompt over the engines' max_model_len), \"shed\" failed for want of capacity or of a replica.\n\n", r.SLO.TTFT, r.SLO.ITL)
	b.WriteString("| policy | TTFT p50 | TTFT p99 | ITL p50 | ITL p99 | E2E p50 | E2E p99 | goodput | rejected | shed | interrupted | cached share | of oracle | predicted = reported | busiest replica | prefix copies |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Policies {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %.2f req/s (%s) | %d | %d | %d | %s | %s | %s | %s | %s |\n",
			s.Policy, fmtMs(s.TTFT.P50), fmtMs(s.TTFT.P99), fmtMs(s.ITL.P50), fmtMs(s.ITL.P99), fmtMs(s.E2E.P50), fmtMs(s.E2E.P99),
			s.Goodput, pct(s.GoodputShare), s.Rejected, s.Shed, s.Interrupted, pct(s.CachedShare), pct(s.OracleHitShare),
			predictedExact(s), pct(s.BusiestShare), fmtCount(s.Copies))
	}
	fmt.Fprintf(&b, "| oracle (bound) | | | | | | | | | | | %s | 100%% | | | |\n", pct(float64(r.ReusableTokens)/float64(max(r.PromptTokens, 1))))
	if len(plots) > 0 {
		b.WriteString("\n")
		for _, p := range plots {
			fmt.Fprintf(&b, "![%s](%s)\n", strings.TrimSuffix(p[strings.LastIndex(p, "/")+1:], ".png"), p)
		}
	}
	return b.String()
}

// Speedup is how many times lower policy a's TTFT p50 is than b's (0 when
// either is missing).
func (r *Report) Speedup(a, b string) float64 {
	var x, y Millis
	for _, s := range r.Policies {
		switch s.Policy {
		case a:
			x = s.TTFT.P50
		case b:
			y = s.TTFT.P50
		}
	}
	if x <= 0 || y <= 0 {
		return 0
	}
	return float64(y / x)
}

// predictedExact is a summary's predicted = reported cell: the share,
// or "n/a" where no answer reported its cached tokens.
func predictedExact(s Summary) string {
	if s.CachedFrom != "usage" {
		return "n/a"
	}
	return pct(s.PredictedExactShare)
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// fmtCount shows a count that may not have been read ("-").
func fmtCount(n *int) string {
	if n == nil {
		return "-"
	}
	return strconv.Itoa(*n)
}

func fmtMs(m Millis) string {
	d := time.Duration(float64(m) * float64(time.Millisecond))
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(m))
}
