package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/anthropic"
	"github.com/llmgw/llmgw/router/auth"
	"github.com/llmgw/llmgw/router/scheduler"
)

const messagesBody = `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hello there"}]}`

// anthropicError decodes an Anthropic-shaped error and checks its type
// is the one for status.
func anthropicError(t *testing.T, status int, b []byte) string {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type, Message string
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Type != "error" || e.Error.Message == "" {
		t.Fatalf("not an Anthropic error: %s", b)
	}
	if want := anthropic.ErrorType(status); e.Error.Type != want {
		t.Errorf("error type %q for %d, want %q: %s", e.Error.Type, status, want, b)
	}
	return e.Error.Message
}

// TestMessagesErrorsInAnthropicShape: every refusal the router makes on
// /v1/messages and /v1/messages/count_tokens (no key, a wrong key, a body
// over the limit, an unknown model, malformed JSON, no replica) reaches an
// Anthropic client in Anthropic's shape, and reaches no engine; the key
// is accepted in x-api-key, as Anthropic's SDKs send it, and never
// reaches the engine.
func TestMessagesErrorsInAnthropicShape(t *testing.T) {
	var got []http.Header
	engine := backend(t, func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Clone())
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":5,"output_tokens":1}}`)
	})
	keys, err := auth.Open(auth.Options{File: keysFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, func(d *testDeps, _ *scheduler.Config) { d.Auth, d.Options.MaxBodyBytes = keys, 1<<10 }, engine)
	send := func(path, header, key, body string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set(header, key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for _, c := range []struct {
		name, path, header, key, body string
		status                        int
	}{
		{"no key", "/v1/messages", "", "", messagesBody, 401},
		{"wrong key", "/v1/messages", "x-api-key", "sk-wrong", messagesBody, 401},
		{"oversize body", "/v1/messages", "x-api-key", openKey, `{"model":"m","pad":"` + strings.Repeat("x", 2<<10) + `"}`, 413},
		{"unknown model", "/v1/messages", "x-api-key", openKey, strings.Replace(messagesBody, `"m"`, `"nope"`, 1), 404},
		{"malformed JSON", "/v1/messages", "x-api-key", openKey, `{"model":`, 400},
		{"a model the key may not use", "/v1/messages", "x-api-key", onlyOKey, messagesBody, 404},
		{"count_tokens, unknown model", "/v1/messages/count_tokens", "x-api-key", openKey, `{"model":"nope","messages":[]}`, 404},
	} {
		code, b := send(c.path, c.header, c.key, c.body)
		if code != c.status {
			t.Errorf("%s: %d %s; want %d", c.name, code, b, c.status)
			continue
		}
		anthropicError(t, code, b)
	}
	if len(got) != 0 {
		t.Fatalf("refused requests reached the engine %d times", len(got))
	}
	for _, header := range []string{"x-api-key", "Authorization"} {
		key := openKey
		if header == "Authorization" {
			key = "Bearer " + openKey
		}
		if code, b := send("/v1/messages", header, key, messagesBody); code != http.StatusOK || !strings.Contains(string(b), `"type":"message"`) {
			t.Fatalf("key in %s: %d %s", header, code, b)
		}
	}
	for i, hd := range got {
		if hd.Get("X-Api-Key") != "" || hd.Get("Authorization") != "" {
			t.Errorf("request %d: the client's key reached the engine: %v", i, hd)
		}
	}
	// A request is counted once its handler returns, which may be just
	// after the client has read the whole answer.
	want := []string{`llmgw_requests_total{code="200",endpoint="messages"} 2`, `llmgw_requests_total{code="401",endpoint="messages"} 2`,
		`llmgw_requests_total{code="404",endpoint="count_tokens"} 1`}
	var mb []byte
	if !poll.Within(poll.Timeout, func() bool {
		_, mb = get(t, h.admin.URL+"/metrics")
		return !slices.ContainsFunc(want, func(s string) bool { return !strings.Contains(string(mb), s) })
	}) {
		for _, s := range want {
			if !strings.Contains(string(mb), s) {
				t.Errorf("/metrics lacks %s", s)
			}
		}
	}
}

// TestMessagesStreamFailsInItsOwnShape: a Messages stream whose replica
// dies mid-way ends with Anthropic's error event, not OpenAI's [DONE].
func TestMessagesStreamFailsInItsOwnShape(t *testing.T) {
	engine := backend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":5,\"output_tokens\":0}}}\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the engine dies mid-stream
	})
	h := newHarness(t, 1<<20, engine)
	resp, b := post(t, h.srv.URL+"/v1/messages", strings.Replace(messagesBody, `"messages"`, `"stream":true,"messages"`, 1))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	s := string(b)
	i := strings.Index(s, "event: error\ndata: ")
	if !strings.HasPrefix(s, "event: message_start") || i < 0 || strings.Contains(s, "[DONE]") {
		t.Fatalf("stream %q; want message_start, then an error event, no [DONE]", s)
	}
	anthropicError(t, http.StatusBadGateway, []byte(strings.TrimSpace(s[i+len("event: error\ndata: "):])))
}
