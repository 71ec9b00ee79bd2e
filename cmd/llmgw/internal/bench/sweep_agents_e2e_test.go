package bench_test

import (
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet"
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
	const rate = 0.4
	s := orderingSweep(t, 5*time.Minute,
		fleet.Options{Shards: 8, SimArgs: strings.Fields("--sim-prefill-per-token 500us --sim-inter-token-latency 25ms")},
		bench.DefaultPolicy+","+agentsBestPeer, report.SLO{TTFT: 2 * time.Second, ITL: 200 * time.Millisecond}, []float64{rate},
		func(rate float64) (workload.Workload, error) {
			o := workload.DefaultFanOutOptions()
			o.Agents, o.Bursts, o.Rate = 4, 4, rate // 10 s of bursts, as the sweep sizes them
			return workload.FanOut(o)
		})
	r := s.Rates[0]
	if len(r.Policies) != 2 || r.Policies[0].Policy != bench.DefaultPolicy || r.Policies[1].Policy != agentsBestPeer {
		t.Fatalf("policies ran as %+v", r.Policies)
	}
	def, peer := r.Policies[0], r.Policies[1]
	if def.Goodput < (1-agentsNoise)*peer.Goodput {
		t.Errorf("at %g bursts/s the default's goodput %.2f req/s is under %s's %.2f by more than %.0f%%",
			rate, def.Goodput, agentsBestPeer, peer.Goodput, 100*agentsNoise)
	}
}
