package client

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
	"github.com/llmgw/llmgw/cmd/vllm-sim/simtokenizer"
)

// simTokens are r's prompt ids under vllm-sim's tokenizer, computed in
// process: what llmgw bench computed before it asked the engines.
func simTokens(r *workload.Request) []uint32 {
	var tok simtokenizer.Tokenizer
	if r.Messages == nil {
		return tok.Encode(r.Prompt, false)
	}
	m := make([]simtokenizer.Message, len(r.Messages))
	for i, msg := range r.Messages {
		m[i] = simtokenizer.Message{Role: msg.Role, Content: msg.Content}
	}
	return tok.Encode(simtokenizer.RenderChat(m, true, false), false)
}

// TestTokenizeOnEngine: a real vllm-sim's /tokenize gives every request of
// a chat and a completion workload exactly the ids the simulator's
// tokenizer gives in process, so the oracle's bound means what it meant;
// an engine that refuses fails the call naming the request.
func TestTokenizeOnEngine(t *testing.T) {
	sim := startSim(t)
	chat, err := workload.Chat(workload.ChatOptions{Users: 2, Rounds: 3, SystemTokens: 40, DocTokens: 20, UserTokens: 10, ReplyTokens: 5, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	prefix, err := workload.SharedPrefix(workload.PrefixOptions{Groups: 2, PerGroup: 3, PrefixTokens: 50, SuffixTokens: 7, OutputTokens: 2, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []workload.Workload{chat, prefix} {
		got, err := Tokenize(context.Background(), http.DefaultClient, sim.URL, "sim-model", w.Requests, 3)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		for i := range w.Requests {
			if want := simTokens(&w.Requests[i]); len(want) == 0 || !slices.Equal(got[i], want) {
				t.Fatalf("%s request %d: engine ids %v; want the simulator tokenizer's %v", w.Name, i, got[i], want)
			}
		}
	}
	_, err = Tokenize(context.Background(), http.DefaultClient, sim.URL, "no-such-model", prefix.Requests[:2], 1)
	if err == nil || !strings.Contains(err.Error(), "tokenize request 0") || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown model: error %v; want one naming request 0 and the engine's 404", err)
	}
}
