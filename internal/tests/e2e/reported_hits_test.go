package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/route"
	"github.com/llmgw/llmgw/router/server"
)

// TestReportedHitsWithoutPromptTokensDetails runs a replica as vLLM runs
// by default, without --enable-prompt-tokens-details, so no answer says
// what it hit. The engine's own counters still do: each request's growth
// of vllm:prefix_cache_hits_total is its reported hit. The router's
// predicted cached tokens equal it on at least 99% of a few dozen
// requests sharing prefixes, and /admin/replicas sets the router's
// predicted tokens beside the engine-reported ones.
func TestReportedHitsWithoutPromptTokensDetails(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and a vllm-sim process")
	}
	f := startFleetWith(t, []string{"--no-enable-prompt-tokens-details"})
	id, s := f.ids[0], f.sims[f.ids[0]]
	r := f.router(t, "router-1")
	waitExact(t, r, id)
	poll.Until(t, "the engine's counters scraped", func() bool { return adminHits(t, r, id).ReportedFrom == "engine_counters" })

	const prefixes, turns = 6, 6
	var requests, matched int
	var predicted, reported uint64
	for p := range prefixes {
		prev := ""
		for turn := range turns {
			prompt := fmt.Sprintf("%s turn %d of %d", longPrompt(100+p), turn, p)
			if prev != "" {
				waitPromptIndexed(t, r, prev)
			}
			before := s.metric(t, "vllm:prefix_cache_hits_total")
			a := call(t, r.Addr(), "/v1/completions", completion(prompt, false))
			if a.code != http.StatusOK || a.replica != id {
				t.Fatalf("prefix %d turn %d: %d on %q: %s", p, turn, a.code, a.replica, a.body)
			}
			if d := usageDetails(t, a.body); d != "null" {
				t.Fatalf("the answer's prompt_tokens_details is %s; want null without the flag", d)
			}
			hit := s.metric(t, "vllm:prefix_cache_hits_total") - before
			requests++
			if float64(a.cached) == hit {
				matched++
			} else {
				t.Logf("prefix %d turn %d: predicted %d cached tokens, the engine reports %v", p, turn, a.cached, hit)
			}
			predicted, reported, prev = predicted+uint64(a.cached), reported+uint64(hit), prompt
		}
	}
	t.Logf("predicted equals reported on %d of %d requests; %d tokens predicted cached, %d reported", matched, requests, predicted, reported)
	if matched*100 < requests*99 {
		t.Errorf("predicted equals reported on %d of %d requests; want at least 99%%", matched, requests)
	}
	if reported == 0 {
		t.Fatal("the engine reported no hits: the prompts share no prefix")
	}
	var h route.ReplicaHits
	poll.Until(t, "the engine's hits in /admin/replicas", func() bool {
		h = adminHits(t, r, id)
		return h.ReportedHitTokens == float64(reported)
	})
	if h.PredictedCachedTokens != predicted || h.ReportedFrom != "engine_counters" {
		t.Errorf("/admin/replicas hits %+v; want %d predicted against %d reported from engine_counters", h, predicted, reported)
	}
}

// waitPromptIndexed waits until r's index holds every full block of prompt but
// the last token's, what the engine reuses of it: the KV events of the
// request that sent it have reached the router.
func waitPromptIndexed(t *testing.T, r *server.Server, prompt string) {
	t.Helper()
	poll.Until(t, "the previous prompt's blocks in the router's index", func() bool {
		e := explain(t, r.AdminAddr(), completion(prompt, false))
		return e.Chosen.Mode == "exact" && e.Chosen.CachedTokens > 0 && e.Chosen.CachedTokens == (e.PromptTokens-1)/16*16
	})
}

// adminHits reads replica id's hits from the router's /admin/replicas.
func adminHits(t *testing.T, r *server.Server, id string) route.ReplicaHits {
	t.Helper()
	resp, err := http.Get("http://" + r.AdminAddr() + "/admin/replicas")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Replicas []route.ReplicaState `json:"replicas"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	for _, rep := range out.Replicas {
		if rep.ID == id {
			return rep.Hits
		}
	}
	t.Fatalf("/admin/replicas lists no %s", id)
	return route.ReplicaHits{}
}

// usageDetails is the answer's usage.prompt_tokens_details as written.
func usageDetails(t *testing.T, body []byte) string {
	t.Helper()
	var a struct {
		Usage map[string]json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("answer %s: %v", body, err)
	}
	if d, ok := a.Usage["prompt_tokens_details"]; ok {
		return string(d)
	}
	return "absent"
}
