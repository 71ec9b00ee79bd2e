package demo

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
)

// verdictNoise is the relative difference in requests served within the
// SLO below which the verdict calls two policies level: bench's default
// -noise, from repeated runs at one rate.
const verdictNoise = 0.1

// contenders name the policies a verdict weighs: llmgw's default, the
// baseline and the peers' policies (bench.DefaultPolicy, bench.Baseline,
// bench.PeerNames), with the workload's description.
type contenders struct {
	Default, Baseline string
	Peers             []string
	Workload          string
}

// verdict is the demo's one-line conclusion from its own rows: how many
// requests llmgw's default served within the SLO, against the best peer
// (the one that served the most) and the baseline. A difference within
// noise (relative to the lower count) is called level, a loss is said as
// one, and a policy that did not run is left out, or said to be missing.
func verdict(rows []report.Summary, c contenders, noise float64) string {
	d, ok := find(rows, c.Default)
	if !ok {
		return fmt.Sprintf("no verdict: llmgw's default (%s) did not run", c.Default)
	}
	good := inSLO(d)
	var versus []string
	p, peered := bestPeer(rows, c.Peers)
	if peered {
		versus = append(versus, versusPeer(good, inSLO(p), p.Policy, noise))
	}
	if b, ok := find(rows, c.Baseline); ok {
		versus = append(versus, versusBaseline(good, inSLO(b), b.Policy))
	}
	s := fmt.Sprintf("llmgw's default (%s) served %d of %d requests within the SLO on workload %s", c.Default, good, d.Requests, c.Workload)
	if len(versus) > 0 {
		s += ": " + strings.Join(versus, " and ")
	}
	if !peered {
		return s + "; no peer's policy ran"
	}
	if level(good, inSLO(p), noise) {
		s += ttftVersus(d, p)
	}
	return s
}

// level reports whether the counts d and p are within noise of each
// other, where the SLO alone does not tell the policies apart.
func level(d, p int, noise float64) bool {
	return float64(d) <= float64(p)*(1+noise) && float64(p) <= float64(d)*(1+noise)
}

// ttftVersus compares the default's median time to first token with the
// best peer's, the latency the SLO's threshold hides when both meet it;
// "" when either has none.
func ttftVersus(d, p report.Summary) string {
	a, b := float64(d.TTFT.P50), float64(p.TTFT.P50)
	if a <= 0 || b <= 0 {
		return ""
	}
	return fmt.Sprintf("; median time to first token %.0fms against %s's %.0fms", a, p.Policy, b)
}

// versusPeer compares the default's count within the SLO, d, with the
// best peer's, p.
func versusPeer(d, p int, peer string, noise float64) string {
	who := fmt.Sprintf("the best peer (%s, %d)", peer, p)
	switch {
	case float64(d) > float64(p)*(1+noise) && p == 0:
		return "more than " + who
	case float64(d) > float64(p)*(1+noise):
		return fmt.Sprintf("%.0f%% more than %s", 100*float64(d-p)/float64(p), who)
	case float64(p) > float64(d)*(1+noise):
		return fmt.Sprintf("%.0f%% fewer than %s", 100*float64(p-d)/float64(p), who)
	case d == p:
		return "as many as " + who
	default:
		return fmt.Sprintf("level within %.0f%% noise with %s", 100*noise, who)
	}
}

// versusBaseline compares the default's count within the SLO, d, with the
// baseline's, b, as a ratio.
func versusBaseline(d, b int, baseline string) string {
	switch {
	case b > 0:
		return fmt.Sprintf("%.1f× %s (%d)", float64(d)/float64(b), baseline, b)
	case d > 0:
		return fmt.Sprintf("more than %s (0)", baseline)
	default:
		return fmt.Sprintf("as many as %s (0)", baseline)
	}
}

// bestPeer is the peer policy that served the most requests within the
// SLO, the first in run order on a tie; false when no peer ran.
func bestPeer(rows []report.Summary, peers []string) (report.Summary, bool) {
	var best report.Summary
	found := false
	for _, r := range rows {
		if slices.Contains(peers, r.Policy) && (!found || inSLO(r) > inSLO(best)) {
			best, found = r, true
		}
	}
	return best, found
}

func find(rows []report.Summary, policy string) (report.Summary, bool) {
	for _, r := range rows {
		if r.Policy == policy {
			return r, true
		}
	}
	return report.Summary{}, false
}

// inSLO is how many of the policy's requests met the SLO (the summary
// keeps it as a share of its requests).
func inSLO(s report.Summary) int {
	return int(math.Round(s.GoodputShare * float64(s.Requests)))
}
