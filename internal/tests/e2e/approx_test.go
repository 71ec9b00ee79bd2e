package e2e

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/config"
)

// TestApproxRoutingStaticReplicas runs three simulators without KV events
// behind a router with a static replica list: a repeated long prompt goes
// back to the replica that served it (approx mode, from the router's own
// routing history), which really has it cached; streaming arrives as one
// event per token.
func TestApproxRoutingStaticReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	c := routerConfig("")
	for _, id := range []string{"a/main", "b/main", "c/main"} {
		s := startSim(t, "--sim-latency=false")
		c.Replicas = append(c.Replicas, config.StaticReplica{ID: id, Model: model, Address: s.addr, BlockSize: 16})
	}
	r := startRouter(t, c)

	first := call(t, r.Addr(), "/v1/completions", completion(longPrompt(1), false))
	if first.code != 200 || first.replica == "" {
		t.Fatalf("first request: %d %s", first.code, first.body)
	}
	for i := range 5 {
		a := call(t, r.Addr(), "/v1/completions", completion(longPrompt(1), false))
		if a.code != 200 || a.replica != first.replica || a.mode != "approx" || a.cached == 0 {
			t.Fatalf("repeat %d: status %d replica %q mode %q predicted %d; want 200 on %q, approx, predicted > 0",
				i, a.code, a.replica, a.mode, a.cached, first.replica)
		}
		if got := cachedTokens(t, a.body); got == 0 {
			t.Errorf("repeat %d: the replica reports no cached prompt tokens", i)
		}
	}

	// Streaming: every token is its own SSE event, passed through as sent.
	resp, err := http.Post("http://"+r.Addr()+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"`+model+`","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"count to eight"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	content, done := 0, false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "data: [DONE]":
			done = true
		case strings.HasPrefix(line, "data: ") && strings.Contains(line, `"content"`):
			content++
		}
	}
	if !done || content < 8 {
		t.Errorf("stream had %d content events, [DONE] %v; want >= 8 and true", content, done)
	}
}
