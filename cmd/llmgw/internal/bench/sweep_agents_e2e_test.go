package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet/fleettest"
)

// agentsBestPeer is the peer the agentic ordering is checked against. In
// the committed four-agent sweep (docs/BENCHMARKS.md, "Agentic fan-out,
// four agents"; three seeds) the best peers at 0.4 bursts a second are
// within 1% of each other on the median (aibrix-prefix 3.59 req/s,
// llmd-sticky and sglang-cache-aware 3.57) against the default's 4.55;
// llm-d's current default stands for them. Seed 1, which this test runs,
// gave the default 4.55 against llmd-sticky's 2.94.
const agentsBestPeer = "llmd-sticky"

// agentsNoise is how far the default's goodput may fall under the best
// peer's before the ordering counts as lost: across the committed
// sweep's seeds one policy's goodput at 0.4 moved by up to 50%, and the
// default ran 1.00-1.48x the best peer.
const agentsNoise = 0.15

// sweepOrderingAgents runs the agentic half of the committed ordering:
// four agents taking turns at bursts of 8-32 siblings over
// their own 3,000-token contexts, on eight vllm-sim shards at 70B-class
// latency (the sweep's fleet, docs/BENCHMARKS.md "Rate sweeps"), the
// default against the best peer at 0.4 bursts a second for 10 s. The
// default's goodput must be at least the peer's within agentsNoise, and
// every request must be accounted for.
func sweepOrderingAgents(t *testing.T) {
	bin := bins.Dir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	work := t.TempDir()
	f, err := fleet.Start(ctx, fleet.Options{BinDir: bin, Shards: 8, Routers: 2, WorkDir: work,
		SimArgs: strings.Fields("--sim-prefill-per-token 500us --sim-inter-token-latency 25ms")})
	if err != nil {
		t.Fatal(err)
	}
	defer fleettest.CheckNone(t, work)
	defer f.Close()
	policies, err := bench.SelectPolicies(bench.DefaultPolicy + "," + agentsBestPeer)
	if err != nil {
		t.Fatal(err)
	}
	const rate = 0.4
	s, err := bench.Sweep(ctx, f, bench.SweepOptions{
		Options: bench.Options{Policies: policies, Model: "sim-model", BlockSize: 16,
			SLO: report.SLO{TTFT: 2 * time.Second, ITL: 200 * time.Millisecond}},
		Rates: []float64{rate},
		Build: func(rate float64) (workload.Workload, error) {
			o := workload.DefaultFanOutOptions()
			o.Agents, o.Bursts, o.Rate = 4, 4, rate // 10 s of bursts, as the sweep sizes them
			return workload.FanOut(o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Rates[0]
	for _, p := range r.Policies {
		t.Logf("%s: %d ok, %d shed, goodput %.2f req/s (%.0f%% within the SLO), TTFT p90 %.0f ms, busiest replica %.0f%%, send lag p99 %.0f ms",
			p.Policy, p.OK, p.Shed, p.Goodput, 100*p.GoodputShare, p.TTFT.P90, 100*p.BusiestShare, p.SendLag.P99)
		if got := p.OK + p.Shed + p.Interrupted + p.Rejected; got != r.Requests || p.Requests != r.Requests {
			t.Errorf("%s: %d of %d requests accounted for", p.Policy, got, r.Requests)
		}
	}
	if len(r.Policies) != 2 || r.Policies[0].Policy != bench.DefaultPolicy || r.Policies[1].Policy != agentsBestPeer {
		t.Fatalf("policies ran as %+v", r.Policies)
	}
	def, peer := r.Policies[0], r.Policies[1]
	if def.Goodput < (1-agentsNoise)*peer.Goodput {
		t.Errorf("at %g bursts/s the default's goodput %.2f req/s is under %s's %.2f by more than %.0f%%",
			rate, def.Goodput, agentsBestPeer, peer.Goodput, 100*agentsNoise)
	}
}
