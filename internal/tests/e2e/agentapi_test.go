package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/anthropic"
	"github.com/llmgw/llmgw/router/responses"
)

// agentContext is a coding agent's standing context: a system prompt and
// a file it works on, about 2,000 tokens, which every turn re-sends.
func agentContext() string {
	var sb strings.Builder
	sb.WriteString("You are a coding agent. The repository's main file follows.\n")
	for i := range 400 {
		fmt.Fprintf(&sb, "func f%d() int { return %d }\n", i, i*7)
	}
	return sb.String()
}

// engineCache reads a replica's prefix-cache counters from its /metrics:
// the prompt tokens it was asked for and those it found cached.
func engineCache(t *testing.T, s *sim) (queries, hits float64) {
	t.Helper()
	resp, err := http.Get("http://" + s.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(name, "vllm:prefix_cache_queries_total"):
			queries, _ = strconv.ParseFloat(v, 64)
		case strings.HasPrefix(name, "vllm:prefix_cache_hits_total"):
			hits, _ = strconv.ParseFloat(v, 64)
		}
	}
	return queries, hits
}

// waitIndexed waits until the router predicts chat's prompt cached in
// full blocks on replica, from the engine's KV events alone.
func waitIndexed(t *testing.T, admin, chat, replica string, promptTokens int) {
	t.Helper()
	poll.Until(t, "the turn's blocks in the router's index", func() bool {
		e := explainChat(t, admin, chat)
		return e.Chosen.Replica == replica && e.Chosen.Mode == "exact" && e.Chosen.CachedTokens >= promptTokens-16
	})
}

// TestMessagesAgentTurnsHit: a four-turn agent conversation over the
// Anthropic Messages API. Each turn after the first routes exact to the
// replica holding the conversation, and that engine reports at least 90%
// of the turn's prompt tokens as cached.
func TestMessagesAgentTurnsHit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f := startFleetWith(t, nil, nil)
	r := f.router(t, "router-1")
	poll.Until(t, "two replicas from consul", func() bool { return len(r.Replicas().ForModel(model)) == 2 })
	msgs := []map[string]any{}
	home := ""
	for turn := 1; turn <= 4; turn++ {
		msgs = append(msgs, map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": fmt.Sprintf("Step %d: which function returns %d?", turn, turn*70)}}})
		body, _ := json.Marshal(map[string]any{"model": model, "max_tokens": 8, "system": agentContext(), "messages": msgs})
		var q0, h0 float64
		if home != "" {
			q0, h0 = engineCache(t, f.sims[home])
		}
		a := call(t, r.Addr(), "/v1/messages", string(body))
		if a.code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", turn, a.code, a.body)
		}
		var m struct {
			Content []struct{ Type, Text string } `json:"content"`
			Usage   struct {
				Input int `json:"input_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(a.body, &m); err != nil || len(m.Content) == 0 || m.Usage.Input == 0 {
			t.Fatalf("turn %d: answer %s (%v)", turn, a.body, err)
		}
		if home != "" {
			q1, h1 := engineCache(t, f.sims[home])
			if a.mode != "exact" || a.replica != home {
				t.Errorf("turn %d routed %s to %q; want exact to %q", turn, a.mode, a.replica, home)
			}
			t.Logf("turn %d: %s on %s, the engine found %.0f of %.0f prompt tokens cached", turn, a.mode, a.replica, h1-h0, q1-q0)
			if got := (h1 - h0) / (q1 - q0); q1 == q0 || got < 0.9 {
				t.Errorf("turn %d: the engine found %.0f of %.0f prompt tokens cached (%.2f); want at least 90%%", turn, h1-h0, q1-q0, got)
			}
		}
		home = a.replica
		req, err := anthropic.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		chat, err := req.ChatBody()
		if err != nil {
			t.Fatal(err)
		}
		waitIndexed(t, r.AdminAddr(), string(chat), home, m.Usage.Input)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": m.Content[0].Text}}})
	}
}

// TestResponsesAgentTurnsHit: a four-turn agent conversation over the
// Responses API, each turn continuing the last by previous_response_id
// (the router keeps the conversation and sends the engine all of it).
// Each turn after the first routes exact to the replica holding the
// conversation, and that engine reports at least 90% of the turn's
// prompt tokens as cached in its usage.
func TestResponsesAgentTurnsHit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f := startFleetWith(t, nil, nil)
	r := f.router(t, "router-1")
	poll.Until(t, "two replicas from consul", func() bool { return len(r.Replicas().ForModel(model)) == 2 })
	var items []json.RawMessage // the conversation as the engine sees it
	prev, home := "", ""
	for turn := 1; turn <= 4; turn++ {
		user, _ := json.Marshal(map[string]any{"type": "message", "role": "user", "content": fmt.Sprintf("Step %d: which function returns %d?", turn, turn*70)})
		items = append(items, user)
		req := map[string]any{"model": model, "max_output_tokens": 8, "instructions": agentContext(), "input": []json.RawMessage{user}}
		if prev != "" {
			req["previous_response_id"] = prev
		}
		body, _ := json.Marshal(req)
		a := call(t, r.Addr(), "/v1/responses", string(body))
		if a.code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", turn, a.code, a.body)
		}
		var resp struct {
			ID     string            `json:"id"`
			Output []json.RawMessage `json:"output"`
			Usage  struct {
				Input   int `json:"input_tokens"`
				Details struct {
					Cached int `json:"cached_tokens"`
				} `json:"input_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(a.body, &resp); err != nil || resp.ID == "" || len(resp.Output) == 0 || resp.Usage.Input == 0 {
			t.Fatalf("turn %d: answer %s (%v)", turn, a.body, err)
		}
		if home != "" {
			if a.mode != "exact" || a.replica != home {
				t.Errorf("turn %d routed %s to %q; want exact to %q", turn, a.mode, a.replica, home)
			}
			t.Logf("turn %d: %s on %s, the engine reports %d of %d prompt tokens cached", turn, a.mode, a.replica, resp.Usage.Details.Cached, resp.Usage.Input)
			if got := float64(resp.Usage.Details.Cached) / float64(resp.Usage.Input); got < 0.9 {
				t.Errorf("turn %d: the engine reports %d of %d prompt tokens cached (%.2f); want at least 90%%", turn, resp.Usage.Details.Cached, resp.Usage.Input, got)
			}
		}
		whole, _ := json.Marshal(map[string]any{"model": model, "instructions": agentContext(), "input": items})
		parsed, err := responses.Parse(whole)
		if err != nil {
			t.Fatal(err)
		}
		chat, err := parsed.ChatBody()
		if err != nil {
			t.Fatal(err)
		}
		prev, home = resp.ID, a.replica
		waitIndexed(t, r.AdminAddr(), string(chat), home, resp.Usage.Input)
		items = append(items, resp.Output...)
	}
}
