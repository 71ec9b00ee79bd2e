package demo

import (
	"testing"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
)

// TestVerdict: the verdict follows the rows, whichever way they went.
func TestVerdict(t *testing.T) {
	c := contenders{Default: "precise-prefix", Baseline: "round-robin", Peers: []string{"dynamo", "llmd-precise"}, Workload: "chat"}
	// row is a policy that served good of 64 requests within the SLO.
	row := func(policy string, good int) report.Summary {
		return report.Summary{Policy: policy, Requests: 64, OK: 64, GoodputShare: float64(good) / 64}
	}
	// timed sets a row's median time to first token, in milliseconds.
	timed := func(r report.Summary, p50 float64) report.Summary {
		r.TTFT.P50 = report.Millis(p50)
		return r
	}
	const head = "llmgw's default (precise-prefix) served "
	for _, tt := range []struct {
		name string
		rows []report.Summary
		want string
	}{
		{"win", []report.Summary{row("round-robin", 30), row("precise-prefix", 60), row("dynamo", 48), row("llmd-precise", 40)},
			head + "60 of 64 requests within the SLO on workload chat: 25% more than the best peer (dynamo, 48) and 2.0× round-robin (30)"},
		{"best peer is the one that served most", []report.Summary{row("round-robin", 30), row("precise-prefix", 60), row("dynamo", 40), row("llmd-precise", 50)},
			head + "60 of 64 requests within the SLO on workload chat: 20% more than the best peer (llmd-precise, 50) and 2.0× round-robin (30)"},
		{"tie within noise", []report.Summary{row("round-robin", 30), row("precise-prefix", 58), row("dynamo", 60), row("llmd-precise", 20)},
			head + "58 of 64 requests within the SLO on workload chat: level within 10% noise with the best peer (dynamo, 60) and 1.9× round-robin (30)"},
		{"exact tie", []report.Summary{row("round-robin", 64), row("precise-prefix", 64), row("dynamo", 64)},
			head + "64 of 64 requests within the SLO on workload chat: as many as the best peer (dynamo, 64) and 1.0× round-robin (64)"},
		{"loss", []report.Summary{row("round-robin", 30), row("precise-prefix", 40), row("dynamo", 50)},
			head + "40 of 64 requests within the SLO on workload chat: 20% fewer than the best peer (dynamo, 50) and 1.3× round-robin (30)"},
		{"behind round-robin", []report.Summary{row("round-robin", 40), row("precise-prefix", 20), row("dynamo", 20)},
			head + "20 of 64 requests within the SLO on workload chat: as many as the best peer (dynamo, 20) and 0.5× round-robin (40)"},
		{"nothing within the SLO", []report.Summary{row("round-robin", 0), row("precise-prefix", 0), row("dynamo", 0)},
			head + "0 of 64 requests within the SLO on workload chat: as many as the best peer (dynamo, 0) and as many as round-robin (0)"},
		{"others served none", []report.Summary{row("round-robin", 0), row("precise-prefix", 5), row("dynamo", 0)},
			head + "5 of 64 requests within the SLO on workload chat: more than the best peer (dynamo, 0) and more than round-robin (0)"},
		{"one peer missing", []report.Summary{row("round-robin", 30), row("precise-prefix", 60), row("llmd-precise", 40)},
			head + "60 of 64 requests within the SLO on workload chat: 50% more than the best peer (llmd-precise, 40) and 2.0× round-robin (30)"},
		{"no peer ran", []report.Summary{row("round-robin", 30), row("precise-prefix", 60)},
			head + "60 of 64 requests within the SLO on workload chat: 2.0× round-robin (30); no peer's policy ran"},
		{"no baseline", []report.Summary{row("precise-prefix", 60), row("dynamo", 48)},
			head + "60 of 64 requests within the SLO on workload chat: 25% more than the best peer (dynamo, 48)"},
		{"default alone", []report.Summary{row("precise-prefix", 60)},
			head + "60 of 64 requests within the SLO on workload chat; no peer's policy ran"},
		{"no default", []report.Summary{row("round-robin", 30), row("dynamo", 48)},
			"no verdict: llmgw's default (precise-prefix) did not run"},
		{"level, told apart by TTFT", []report.Summary{row("round-robin", 61), timed(row("precise-prefix", 63), 67), timed(row("dynamo", 64), 260)},
			head + "63 of 64 requests within the SLO on workload chat: level within 10% noise with the best peer (dynamo, 64) and 1.0× round-robin (61); median time to first token 67ms against dynamo's 260ms"},
		{"a win leaves TTFT out", []report.Summary{row("round-robin", 30), timed(row("precise-prefix", 60), 67), timed(row("dynamo", 48), 260)},
			head + "60 of 64 requests within the SLO on workload chat: 25% more than the best peer (dynamo, 48) and 2.0× round-robin (30)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := verdict(tt.rows, c, verdictNoise); got != tt.want {
				t.Errorf("verdict:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
