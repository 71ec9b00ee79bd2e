package e2e

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/server"
)

// TestDataParallelRankPinning runs one replica with four data-parallel
// ranks, each publishing its own KV events through the driver's intake
// and forwarder to routers found in Consul. The engine picks a rank by
// load (vllm-sim follows vLLM's DP balancer) unless the request names one
// with X-data-parallel-rank. With pinning, the router's predicted cached
// tokens equal the engine's reported ones on at least 99% of a few dozen
// requests sharing prefixes. The same workload through a router with
// pin_data_parallel_rank off is logged, not asserted: the engine then
// spreads a prefix's turns over the ranks and finds the predicted prefix
// only by chance.
func TestDataParallelRankPinning(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and a vllm-sim process")
	}
	f := startFleetSpecs(t, replicaSpec{dp: 4})
	id := f.ids[0]
	pinned := f.router(t, "router-1")
	waitExact(t, pinned, id)

	got := dpWorkload(t, pinned, id, 100)
	t.Logf("pinned: predicted equals reported on %d of %d requests; %d tokens predicted cached, %d reported", got.matched, got.requests, got.predicted, got.reported)
	if got.matched*100 < got.requests*99 {
		t.Errorf("pinned: predicted equals reported on %d of %d requests; want at least 99%%", got.matched, got.requests)
	}
	if got.reported == 0 {
		t.Fatal("the engine reported no hits: the prompts share no prefix")
	}

	unpinned := f.routerWith(t, "router-2", func(c *config.Config) { c.PinDataParallelRank = false })
	waitExact(t, unpinned, id)
	off := dpWorkload(t, unpinned, id, 200)
	t.Logf("unpinned: predicted equals reported on %d of %d requests; %d tokens predicted cached, %d reported", off.matched, off.requests, off.predicted, off.reported)
}

// dpTally counts a workload's requests and those whose predicted cached
// tokens equal the engine's reported ones.
type dpTally struct {
	requests, matched   int
	predicted, reported int
}

// dpWorkload sends six prefixes of six turns each through r to replica
// id, one request at a time, each turn once the previous turn's blocks
// are in r's index; seed keeps the prompts apart from other runs.
func dpWorkload(t *testing.T, r *server.Server, id string, seed int) dpTally {
	t.Helper()
	const prefixes, turns = 6, 6
	var n dpTally
	for p := range prefixes {
		prev := ""
		for turn := range turns {
			prompt := fmt.Sprintf("%s turn %d of %d", longPrompt(seed+p), turn, p)
			if prev != "" {
				waitPromptIndexed(t, r, prev)
			}
			a := call(t, r.Addr(), "/v1/completions", completion(prompt, false))
			if a.code != http.StatusOK || a.replica != id || a.mode != "exact" {
				t.Fatalf("prefix %d turn %d: %d on %q (%s): %s", p, turn, a.code, a.replica, a.mode, a.body)
			}
			hit := cachedTokens(t, a.body)
			n.requests++
			if a.cached == hit {
				n.matched++
			} else {
				t.Logf("prefix %d turn %d: predicted %d cached tokens, the engine reports %d", p, turn, a.cached, hit)
			}
			n.predicted, n.reported, prev = n.predicted+a.cached, n.reported+hit, prompt
		}
	}
	return n
}
