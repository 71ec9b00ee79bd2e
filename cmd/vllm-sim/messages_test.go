package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/anthropic"
)

// The Messages API as vLLM's Anthropic bridge serves it
// (vllm/entrypoints/anthropic/serving.py @ 0001948b, api_router.py @
// 01540b75): converted to a chat completion, answered in Anthropic's shapes.

const messagesBody = `{"model":"sim-model","max_tokens":6,"system":[{"type":"text","text":"Be brief."}],` +
	`"messages":[{"role":"user","content":"What is a prefix cache?"},` +
	`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"A cache."}]},` +
	`{"role":"user","content":[{"type":"text","text":"Say more."}]}]`

// promptTokens is what /tokenize counts for the chat body router/anthropic
// converts body to: the prompt the router keys.
func promptTokens(t *testing.T, p proc, body string) int {
	t.Helper()
	r, err := anthropic.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	chat, err := r.ChatBody()
	if err != nil {
		t.Fatal(err)
	}
	var tok struct{ Count int }
	if st := post(t, p.URL+"/tokenize", string(chat), &tok); st != 200 || tok.Count == 0 {
		t.Fatalf("tokenize: %d, %d tokens", st, tok.Count)
	}
	return tok.Count
}

func TestMessages(t *testing.T) {
	p := startSim(t, nil)
	want := promptTokens(t, p, messagesBody+`}`)
	var m struct {
		ID, Type, Role, Model string
		StopReason            string  `json:"stop_reason"`
		StopSequence          *string `json:"stop_sequence"`
		Content               []struct{ Type, Text string }
		Usage                 map[string]int
	}
	if st := post(t, p.URL+"/v1/messages", messagesBody+`}`, &m); st != 200 {
		t.Fatalf("status %d", st)
	}
	if !strings.HasPrefix(m.ID, "chatcmpl-") || m.Type != "message" || m.Role != "assistant" || m.Model != "sim-model" || m.StopSequence != nil {
		t.Errorf("message %+v", m)
	}
	if len(m.Content) != 1 || m.Content[0].Type != "text" || m.Content[0].Text == "" {
		t.Errorf("content %+v; want one text block", m.Content)
	}
	if m.Usage["input_tokens"] != want || len(m.Usage) != 2 {
		t.Errorf("usage %v; want input_tokens %d (the converted chat prompt) and output_tokens only", m.Usage, want)
	}
	if out := m.Usage["output_tokens"]; !(m.StopReason == "max_tokens" && out == 6 || m.StopReason == "end_turn" && out >= 1 && out < 6) {
		t.Errorf("stop_reason %q with %d output tokens", m.StopReason, out)
	}
	var count struct {
		InputTokens       int `json:"input_tokens"`
		ContextManagement struct {
			OriginalInputTokens int `json:"original_input_tokens"`
		} `json:"context_management"`
	}
	if st := post(t, p.URL+"/v1/messages/count_tokens", messagesBody+`}`, &count); st != 200 || count.InputTokens != want || count.ContextManagement.OriginalInputTokens != want {
		t.Errorf("count_tokens: %d %+v; want %d", st, count, want)
	}
}

// sseEvents reads an Anthropic stream: each event's name and data.
func sseEvents(t *testing.T, r io.Reader) (names []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			names = append(names, strings.TrimPrefix(line, "event: "))
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
			data = append(data, d)
		case line != "":
			t.Fatalf("unexpected line %q", line)
		}
	}
	if len(names) != len(data) {
		t.Fatalf("%d event lines, %d data lines", len(names), len(data))
	}
	return names, data
}

func TestMessagesStream(t *testing.T) {
	p := startSim(t, nil)
	want := promptTokens(t, p, messagesBody+`}`)
	resp, err := http.Post(p.URL+"/v1/messages", "application/json", strings.NewReader(messagesBody+`,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Errorf("content type %q", ct)
	}
	names, data := sseEvents(t, resp.Body)
	for i, n := range names {
		if data[i]["type"] != n {
			t.Errorf("event %q carries type %v", n, data[i]["type"])
		}
	}
	k := len(names)
	if k < 6 || names[0] != "message_start" || names[1] != "content_block_start" || names[k-3] != "content_block_stop" || names[k-2] != "message_delta" || names[k-1] != "message_stop" {
		t.Fatalf("events %v", names)
	}
	var text strings.Builder
	for i, n := range names[2 : k-3] {
		d := data[2+i]
		delta, _ := d["delta"].(map[string]any)
		if n != "content_block_delta" || d["index"] != 0.0 || delta["type"] != "text_delta" {
			t.Fatalf("event %d: %s %v; want text deltas for block 0", 2+i, n, d)
		}
		text.WriteString(delta["text"].(string))
	}
	start := data[0]["message"].(map[string]any)
	if u := start["usage"].(map[string]any); u["input_tokens"] != float64(want) || u["output_tokens"] != 0.0 || start["type"] != nil || start["stop_reason"] != nil {
		t.Errorf("message_start %v; want input_tokens %d, no type, null stop_reason", start, want)
	}
	if cb := data[1]["content_block"].(map[string]any); cb["type"] != "text" || cb["text"] != "" {
		t.Errorf("content_block_start %v", data[1])
	}
	md := data[k-2]
	u := md["usage"].(map[string]any)
	reason := md["delta"].(map[string]any)["stop_reason"]
	if u["input_tokens"] != float64(want) || (reason != "max_tokens" || u["output_tokens"] != 6.0) && reason != "end_turn" || text.Len() == 0 {
		t.Errorf("message_delta %v after text %q", md, text.String())
	}
	in, _, _, ok := anthropic.Usage([]byte(mustJSON(t, md)))
	if !ok || in != int64(want) {
		t.Errorf("anthropic.Usage(message_delta) = %d, %v; want %d", in, ok, want)
	}
}

func TestMessagesErrors(t *testing.T) {
	p := startSim(t, nil, "--max-model-len", "64")
	tests := []struct {
		name, body string
		status     int
		shape      string // "openai" for vLLM's validation handler, else "anthropic"
		typ, msg   string
	}{
		{"missing max_tokens", `{"model":"sim-model","messages":[{"role":"user","content":"x"}]}`, 400, "openai", "Bad Request", "max_tokens is required"},
		{"unknown block type", `{"model":"sim-model","max_tokens":1,"messages":[{"role":"user","content":[{"type":"video"}]}]}`, 400, "openai", "Bad Request", "messages[0].content[0].type"},
		{"unknown model", `{"model":"other","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`, 404, "anthropic", "NotFoundError", "`other` does not exist"},
		{"over the context", `{"model":"sim-model","max_tokens":60,"messages":[{"role":"user","content":"` + strings.Repeat("word ", 40) + `"}]}`, 400, "anthropic", "BadRequestError", "maximum context length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e struct {
				Type  string
				Error json.RawMessage
			}
			st := post(t, p.URL+"/v1/messages", tc.body, &e)
			var info struct{ Type, Message string }
			_ = json.Unmarshal(e.Error, &info)
			if st != tc.status || info.Type != tc.typ || !strings.Contains(info.Message, tc.msg) || (e.Type == "error") != (tc.shape == "anthropic") {
				t.Errorf("%d %s %s; want %d, a %s-shaped %s naming %q", st, e.Type, e.Error, tc.status, tc.shape, tc.typ, tc.msg)
			}
		})
	}
}

// TestMessagesAPIKey: vLLM's AuthenticationMiddleware reads only
// Authorization, so Anthropic's x-api-key header is refused.
func TestMessagesAPIKey(t *testing.T) {
	p := startSim(t, nil, "--api-key", "sekret")
	for _, h := range []struct {
		name, value string
		status      int
	}{{"x-api-key", "sekret", 401}, {"Authorization", "Bearer sekret", 200}} {
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/messages", strings.NewReader(messagesBody+`}`))
		req.Header.Set(h.name, h.value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != h.status {
			t.Errorf("%s: %d; want %d", h.name, resp.StatusCode, h.status)
		}
	}
}
