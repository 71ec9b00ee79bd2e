package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/server"
)

// TestEngineBlockSizeOverridesMeta: replicas advertise llmgw-block-size
// 16 and are started with --block-size 16, as a jobspec written for
// vLLM's default would, but their engines run at another size, as vLLM
// forces it: 64 for an MLA model on FlashMLA, and 80 (not a power of two)
// for a hybrid model whose attention block is raised to its Mamba page.
// The router keys their prompts at the engine's size, so what it predicts
// cached is what the engine reports on at least 99% of requests, and the
// disagreement with the meta shows in /admin/replicas and the metrics.
func TestEngineBlockSizeOverridesMeta(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	cases := []struct {
		name string
		args []string
		size int
	}{
		{"FlashMLA forces 64", []string{"--sim-mla"}, 64},
		{"hybrid page alignment gives 80", []string{"--sim-mamba-page-bytes", "163840", "--sim-attn-page-bytes-per-token", "2048"}, 80},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := startFleetWith(t, c.args, c.args)
			r := f.router(t, "router-1")
			poll.Until(t, "two replicas from consul", func() bool { return len(r.Replicas().ForModel(model)) == 2 })
			used := predictedAgainstReported(t, r)
			for _, id := range f.ids {
				if !used[id] {
					continue // never sent anything: no events, the engine's size unknown
				}
				checkSizes(t, r, id, c.size)
			}
		})
	}
}

// predictedAgainstReported sends prompts, each three times (the first
// once its blocks are in the index), and checks the router's predicted
// cached tokens against the engine's reported ones. It returns the
// replicas that served.
func predictedAgainstReported(t *testing.T, r *server.Server) map[string]bool {
	t.Helper()
	used := map[string]bool{}
	agree, total := 0, 0
	for i := range 10 {
		prompt := longPrompt(300 + i)
		for j := range 3 {
			a := call(t, r.Addr(), "/v1/completions", completion(prompt, false))
			if a.code != 200 {
				t.Fatalf("prompt %d, request %d: %d %s", i, j, a.code, a.body)
			}
			used[a.replica] = true
			reported := cachedTokens(t, a.body)
			total++
			if a.cached == reported {
				agree++
			} else {
				t.Logf("prompt %d, request %d on %s (%s): predicted %d cached, engine reported %d", i, j, a.replica, a.mode, a.cached, reported)
			}
			if j == 0 {
				waitCached(t, r, prompt, a.replica)
			} else if a.mode != "exact" || reported == 0 {
				t.Errorf("prompt %d, request %d: mode %q, engine reported %d cached; want exact, > 0", i, j, a.mode, reported)
			}
		}
	}
	t.Logf("predicted equals reported on %d of %d requests", agree, total)
	if agree*100 < 99*total {
		t.Errorf("predicted equals reported on %d of %d requests; want >= 99%%", agree, total)
	}
	return used
}

// checkSizes checks what /admin/replicas and /metrics say of replica id,
// whose engine runs at size where its meta says 16.
func checkSizes(t *testing.T, r *server.Server, id string, size int) {
	t.Helper()
	got := adminReplicas(t, r)[id]
	if got.BlockSize != size || got.MetaBlockSize != 16 || got.EngineBlockSize != size || got.BlockSizeSource != "kv_events" || got.Mode != "exact" {
		t.Errorf("%s in /admin/replicas: %+v; want block_size %d, meta 16, engine %d from kv_events, exact", id, got, size, size)
	}
	if !strings.Contains(got.BlockSizeMismatch, fmt.Sprint(size)) || !strings.Contains(got.BlockSizeMismatch, "16") {
		t.Errorf("%s: block_size_mismatch %q; want it to name %d and 16", id, got.BlockSizeMismatch, size)
	}
	m := metricsText(t, r)
	for _, want := range []string{
		fmt.Sprintf(`llmgw_replica_block_size_mismatch{model=%q,replica=%q} 1`, model, id),
		fmt.Sprintf(`llmgw_replica_block_size{model=%q,replica=%q,source="kv_events"} %d`, model, id, size),
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestMixedBlockSizesOneModel: a model whose replicas run at different
// block sizes, as in a rollout that changes it: two engines at 64, one at
// 16. Keys are per block size and a request is keyed once, at the size
// most exact replicas share; the replica at 16 routes approx with the
// reason, never exact with keys cut at 64, and the exact ones' predicted
// cached tokens equal the engine's.
func TestMixedBlockSizesOneModel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f := startFleetWith(t, []string{"--sim-mla"}, []string{"--sim-mla"}, nil)
	r := f.router(t, "router-1")
	poll.Until(t, "three replicas from consul", func() bool { return len(r.Replicas().ForModel(model)) == 3 })
	odd := f.ids[2]
	for _, id := range f.ids { // every engine publishes events, so every replica is synced
		if a := call(t, f.sims[id].addr, "/v1/completions", completion(longPrompt(900), false)); a.code != 200 {
			t.Fatalf("%s: %d %s", id, a.code, a.body)
		}
	}
	poll.Until(t, "the odd replica approx for its block size, the others exact", func() bool {
		reps := adminReplicas(t, r)
		return reps[f.ids[0]].Mode == "exact" && reps[f.ids[1]].Mode == "exact" &&
			reps[odd].Mode == "approx" && strings.Contains(reps[odd].ModeReason, "block size 16 differs from the 64")
	})
	exact, agree := 0, 0
	for i := range 10 {
		prompt := longPrompt(400 + i)
		for j := range 2 {
			a := call(t, r.Addr(), "/v1/completions", completion(prompt, false))
			if a.code != 200 {
				t.Fatalf("prompt %d, request %d: %d %s", i, j, a.code, a.body)
			}
			if a.replica == odd && a.mode == "exact" {
				t.Errorf("prompt %d, request %d: %s routed exact with keys at 64", i, j, odd)
			}
			if a.mode == "exact" {
				exact++
				if a.cached == cachedTokens(t, a.body) {
					agree++
				}
			}
			if j == 0 && a.replica != odd {
				waitCached(t, r, prompt, a.replica)
			}
		}
	}
	t.Logf("exact requests: %d; predicted equals reported on %d", exact, agree)
	if exact == 0 || agree*100 < 99*exact {
		t.Errorf("predicted equals reported on %d of %d exact requests; want >= 99%% of at least one", agree, exact)
	}
	m := metricsText(t, r)
	for id, want := range map[string]int{f.ids[0]: 1, odd: 0} {
		if line := fmt.Sprintf(`llmgw_replica_block_size_mismatch{model=%q,replica=%q} %d`, model, id, want); !strings.Contains(m, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}
