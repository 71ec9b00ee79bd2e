package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const systemPrompt = `You are the support assistant of a company that runs large language models on Nomad.
Answer briefly and precisely. Cite the relevant part of the runbook when you can. The runbook says:
shards are started by the vllm task driver; routers discover replicas in Consul; a replica that fails
its health check is drained; KV-cache events flow from each leader shard to every router; routing
prefers the replica that already caches the longest prefix of the prompt, weighed against its load.
Escalate anything about data loss to a human. Never invent configuration keys.`

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// conversation is one user's growing chat history.
type conversation struct {
	user     int
	messages []message
}

// newConversation opens with the user's own document (an incident log of
// about 1,500 tokens), so a conversation has a long private prefix as well
// as the shared system prompt: the case where routing decides the cache hit.
func newConversation(user int) *conversation {
	var doc strings.Builder
	fmt.Fprintf(&doc, "Incident log attached by user %d:\n", user)
	for i := range 120 {
		fmt.Fprintf(&doc, "%02d:%02d shard-%d replica r%d-%d health %s\n", i/60, i%60, (user*31+i)%17, user, i%5, []string{"passing", "warning", "critical"}[(user+i)%3])
	}
	return &conversation{user: user, messages: []message{{"system", systemPrompt}, {"user", doc.String()}, {"assistant", "Noted."}}}
}

type turnResult struct {
	ttft           time.Duration
	prompt, cached int
}

// turn asks the next question, streams the answer and appends both.
func (c *conversation) turn(ctx context.Context, url string, maxTokens int) (turnResult, error) {
	q := fmt.Sprintf("User %d, question %d: how do I drain replica %d before an upgrade?", c.user, len(c.messages)/2+1, c.user%7)
	c.messages = append(c.messages, message{"user", q})
	body := map[string]any{
		"model": "demo-model", "messages": c.messages, "max_tokens": maxTokens, "ignore_eos": true,
		"stream": true, "stream_options": map[string]bool{"include_usage": true},
	}
	var res turnResult
	var answer strings.Builder
	start := time.Now()
	err := post(ctx, url+"/v1/chat/completions", body, func(line string) error {
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens        int `json:"prompt_tokens"`
				PromptTokensDetails struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			return fmt.Errorf("bad chunk %q: %w", line, err)
		}
		for _, ch := range chunk.Choices {
			if ch.Delta.Content != "" && res.ttft == 0 {
				res.ttft = time.Since(start)
			}
			answer.WriteString(ch.Delta.Content)
		}
		if chunk.Usage != nil {
			res.prompt, res.cached = chunk.Usage.PromptTokens, chunk.Usage.PromptTokensDetails.CachedTokens
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	c.messages = append(c.messages, message{"assistant", answer.String()})
	return res, nil
}

// post sends a JSON body and feeds each SSE data line to onLine (nil: the
// answer is discarded).
func post(ctx context.Context, url string, body any, onLine func(string) error) error {
	var buf bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&buf).Encode(body); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, &buf)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" || onLine == nil {
			continue
		}
		if err := onLine(line); err != nil {
			return err
		}
	}
	return sc.Err()
}
