package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/gptoss"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/server"
)

// gptossDate is the VLLM_SYSTEM_START_DATE the engine and the router
// share: the date Harmony's system message carries.
const gptossDate = "2026-02-03"

// TestGptOssChatExact runs a replica as a gpt-oss engine (the test data's
// gpt-oss tokenizer, a config.json naming gpt_oss, a pinned start date),
// its KV events through the driver's intake to a router that renders the
// model's chats in Harmony. Over conversations at each reasoning_effort,
// each turn resending the last with the answer and a new question, the
// router's predicted cached tokens equal the engine's reported ones on
// at least 99% of requests, and the engine reports hits.
func TestGptOssChatExact(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and a vllm-sim process")
	}
	dir := gptoss.ModelDir(t)
	t.Setenv("VLLM_SYSTEM_START_DATE", gptossDate) // the engine reads it
	f := startFleetWith(t, []string{"--tokenizer", dir})
	id := f.ids[0]
	r := f.routerWith(t, "router-1", func(c *config.Config) {
		c.Models = map[string]config.Model{model: {TokenizerDir: dir, HarmonyStartDate: gptossDate}}
	})
	waitExact(t, r, id)

	var requests, matched, reported int
	for c, effort := range []string{"low", "medium", "high"} {
		messages := []map[string]string{{"role": "system", "content": fmt.Sprintf("You answer in brief. Conversation %d.", c)}}
		for turn := range 4 {
			messages = append(messages, map[string]string{"role": "user", "content": fmt.Sprintf("Question %d of %d: %s", turn, c, longPrompt(10*c+turn))})
			body, _ := json.Marshal(map[string]any{"model": model, "messages": messages, "max_tokens": 4, "reasoning_effort": effort})
			a := call(t, r.Addr(), "/v1/chat/completions", string(body))
			if a.code != http.StatusOK || a.replica != id || a.mode != "exact" {
				t.Fatalf("conversation %d turn %d: %d on %q in mode %q: %s", c, turn, a.code, a.replica, a.mode, a.body)
			}
			got := cachedTokens(t, a.body)
			requests, reported = requests+1, reported+got
			if a.cached == got {
				matched++
			} else {
				t.Logf("conversation %d turn %d: predicted %d cached tokens, the engine reports %d", c, turn, a.cached, got)
			}
			waitChatIndexed(t, r, string(body))
			messages = append(messages, map[string]string{"role": "assistant", "content": fmt.Sprintf("Answer %d.", turn)})
		}
	}
	t.Logf("predicted equals reported on %d of %d requests; %d tokens reported cached", matched, requests, reported)
	if matched*100 < requests*99 {
		t.Errorf("predicted equals reported on %d of %d requests; want at least 99%%", matched, requests)
	}
	if reported == 0 {
		t.Fatal("the engine reported no hits: the turns share no prefix")
	}
}

// waitChatIndexed waits until r's index holds every full block of the
// chat body's prompt but the last token's: the KV events of the request
// that sent it have reached the router.
func waitChatIndexed(t *testing.T, r *server.Server, body string) {
	t.Helper()
	poll.Until(t, "the chat's blocks in the router's index", func() bool {
		e := explainChat(t, r.AdminAddr(), body)
		return e.Chosen.Mode == "exact" && e.Chosen.CachedTokens > 0 && e.Chosen.CachedTokens == (e.PromptTokens-1)/16*16
	})
}
