package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

func TestRepeatedPromptIsCachedAndFaster(t *testing.T) {
	// Latency on: about 1,200 prompt tokens cost 300 ms of prefill the first
	// time; the second time all but the last block is cached.
	p := startSim(t, nil, "--sim-latency=true", "--block-size", "16", "--enable-prompt-tokens-details")
	prompt := words(0, 600)
	ttft := func() (time.Duration, int) {
		start := time.Now()
		body := `{"model":"sim-model","prompt":` + quote(prompt) + `,"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`
		resp, err := http.Post(p.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var first time.Duration
		cached := -1
		for sc.Scan() {
			line := strings.TrimPrefix(sc.Text(), "data: ")
			if line == "" || line == "[DONE]" {
				continue
			}
			if first == 0 {
				first = time.Since(start)
			}
			var c completion
			if err := json.Unmarshal([]byte(line), &c); err != nil {
				t.Fatal(err)
			}
			if len(c.Choices) == 0 {
				cached = c.Usage.PromptTokensDetails.CachedTokens
			}
		}
		return first, cached
	}
	cold, cachedCold := ttft()
	warm, cachedWarm := ttft()
	if cachedCold != 0 || cachedWarm < 1000 {
		t.Fatalf("cached tokens %d then %d; want 0 then most of the prompt", cachedCold, cachedWarm)
	}
	// The model predicts about 340 ms against 45 ms; a factor of two leaves
	// room for a loaded machine without hiding a model that ignores hits.
	t.Logf("TTFT cold %v (cached %d), warm %v (cached %d)", cold, cachedCold, warm, cachedWarm)
	if warm*2 > cold {
		t.Errorf("TTFT %v cold, %v warm; want the cached prompt at least twice as fast", cold, warm)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestChatStreamShape(t *testing.T) {
	p := startSim(t, nil)
	body := `{"model":"sim-model","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`
	resp, err := http.Post(p.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content type %q; want text/event-stream", ct)
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			lines = append(lines, l)
		}
	}
	// role chunk, 4 content chunks (the last with finish_reason), usage, [DONE]
	if len(lines) != 7 || lines[6] != "data: [DONE]" {
		t.Fatalf("stream lines %q; want 7 ending in [DONE]", lines)
	}
	type chunk struct {
		Object  string `json:"object"`
		Choices []struct {
			Delta struct {
				Role    string  `json:"role"`
				Content *string `json:"content"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *usageJSON `json:"usage"`
	}
	var chunks []chunk
	for _, l := range lines[:6] {
		var c chunk
		if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &c); err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	if chunks[0].Choices[0].Delta.Role != "assistant" || chunks[0].Object != "chat.completion.chunk" {
		t.Errorf("first chunk %+v; want the assistant role", chunks[0])
	}
	if fr := chunks[4].Choices[0].FinishReason; fr == nil || *fr != "length" {
		t.Errorf("last content chunk finish_reason %v; want length", fr)
	}
	if u := chunks[5].Usage; u == nil || len(chunks[5].Choices) != 0 || u.CompletionTokens != 4 || u.TotalTokens != u.PromptTokens+4 {
		t.Errorf("usage chunk %+v; want empty choices and 4 completion tokens", chunks[5])
	}
}

func TestNonStreamingChatAndModels(t *testing.T) {
	p := startSim(t, nil, "--served-model-name", "llama")
	var c struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage usageJSON `json:"usage"`
	}
	body := map[string]any{"model": "llama", "messages": []map[string]any{{"role": "system", "content": "be brief"}, {"role": "user", "content": []map[string]string{{"type": "text", "text": "a"}, {"type": "text", "text": "b"}}}}, "max_tokens": 5, "ignore_eos": true}
	if st := post(t, p.URL+"/v1/chat/completions", body, &c); st != 200 {
		t.Fatalf("status %d", st)
	}
	if c.Object != "chat.completion" || c.Choices[0].Message.Role != "assistant" || c.Usage.CompletionTokens != 5 || c.Choices[0].FinishReason != "length" {
		t.Errorf("chat answer %+v", c)
	}
	resp, err := http.Get(p.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var models struct {
		Data []struct {
			ID   string `json:"id"`
			Root string `json:"root"`
		} `json:"data"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&models)
	if len(models.Data) != 1 || models.Data[0].ID != "llama" || models.Data[0].Root != "sim-model" {
		t.Errorf("models %+v; want llama rooted at sim-model", models)
	}
}

func TestTokenizeForms(t *testing.T) {
	p := startSim(t, nil)
	var prompt, chat, chatParts struct {
		Count       int      `json:"count"`
		MaxModelLen int      `json:"max_model_len"`
		Tokens      []uint32 `json:"tokens"`
	}
	post(t, p.URL+"/tokenize", map[string]any{"prompt": "hello world"}, &prompt)
	if prompt.Count != len(prompt.Tokens) || prompt.Tokens[0] != 1 || prompt.MaxModelLen != 8192 {
		t.Errorf("prompt form %+v; want BOS first and count = len(tokens)", prompt)
	}
	post(t, p.URL+"/tokenize", map[string]any{"messages": []map[string]any{{"role": "user", "content": "a\nb"}}}, &chat)
	post(t, p.URL+"/tokenize", map[string]any{"messages": []map[string]any{{"role": "user", "content": []map[string]string{{"type": "text", "text": "a"}, {"type": "text", "text": "b"}}}}}, &chatParts)
	if chat.Count == 0 || chat.Tokens[0] == 1 {
		t.Errorf("messages form %+v; want the template's tokens without BOS", chat)
	}
	if len(chatParts.Tokens) != len(chat.Tokens) {
		t.Errorf("content parts tokenized to %v; want the same as the newline-joined text %v", chatParts.Tokens, chat.Tokens)
	}
	var detok struct {
		Prompt string `json:"prompt"`
	}
	post(t, p.URL+"/detokenize", map[string]any{"tokens": prompt.Tokens}, &detok)
	if detok.Prompt != "<s>hello world" {
		t.Errorf("detokenize gave %q; want <s>hello world", detok.Prompt)
	}
}

func TestBadRequests(t *testing.T) {
	p := startSim(t, nil, "--max-model-len", "64")
	tests := []struct {
		path, body string
		status     int
		want       string
	}{
		{"/v1/completions", `{"model":"sim-model","prompt":` + quote(words(0, 100)) + `,"max_tokens":4}`, 400, "maximum context length is 64 tokens"},
		{"/v1/completions", `{"model":"sim-model","prompt":"x","max_tokens":70}`, 400, "maximum context length is 64"},
		{"/v1/completions", `{"model":"sim-model",`, 400, "invalid JSON"},
		{"/v1/completions", `{"model":"sim-model"}`, 400, "prompt is required"},
		{"/v1/completions", `{"model":"sim-model","prompt":{"a":1}}`, 400, "prompt must be"},
		{"/v1/completions", `{"model":"sim-model","prompt":"x","max_tokens":0}`, 400, "max_tokens must be at least 1"},
		{"/v1/completions", `{"model":"gpt-4","prompt":"x"}`, 404, "The model `gpt-4` does not exist."},
		{"/v1/chat/completions", `{"model":"sim-model","messages":[]}`, 400, "messages must not be empty"},
		{"/v1/chat/completions", `{"model":"sim-model","messages":[{"content":"x"}]}`, 400, "role is required"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"continue_final_message":true,"add_generation_prompt":true}`, 400, "Cannot set both"},
		{"/tokenize", `{}`, 400, "prompt or messages is required"},
		{"/detokenize", `{"tokens":[200]}`, 400, "not in the vocabulary"},
		{"/debug/kv/drop", `{"batches":1}`, 400, "no KV event publisher"},
	}
	for _, tt := range tests {
		var c completion
		st := post(t, p.URL+tt.path, tt.body, &c)
		if st != tt.status || c.Error == nil || !strings.Contains(c.Error.Message, tt.want) || c.Error.Code != tt.status {
			t.Errorf("%s %s: status %d error %+v; want %d mentioning %q", tt.path, tt.body, st, c.Error, tt.status, tt.want)
		}
	}
}

func TestHeadlessServesNothingAndStops(t *testing.T) {
	port := netport.FreeTCP(t)
	p := startProc(t, nil, "sim-model", "--headless", "--port", itoa(port), "--data-parallel-size", "2", "--data-parallel-rank", "1")
	if !poll.Within(poll.Timeout, func() bool { return strings.Contains(p.Output(), "running headless") }) {
		t.Fatalf("no headless start:\n%s", p.Output())
	}
	if _, err := http.Get("http://127.0.0.1:" + itoa(port) + "/health"); err == nil {
		t.Error("a headless shard answered HTTP")
	}
	_ = syscall.Kill(p.Pid(), syscall.SIGTERM)
	select {
	case <-p.Done():
		if code := p.ExitCode(); code != 0 {
			t.Errorf("exit code %d after SIGTERM; want 0", code)
		}
	case <-time.After(poll.Timeout):
		t.Fatal("headless shard ignored SIGTERM")
	}
}

func TestStartupErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "missing MODEL"},
		{[]string{"m", "--kv-events-config", `{"enable_kv_cache_events":true,"endpoint":"udp://x:1"}`}, "udp://x:1"},
		{[]string{"m", "--tokenizer", "/nonexistent"}, "--tokenizer /nonexistent"},
	}
	for _, tt := range tests {
		p := startProc(t, nil, tt.args...)
		select {
		case <-p.Done():
		case <-time.After(poll.Timeout):
			t.Fatalf("%q kept running", tt.args)
		}
		if p.ExitCode() == 0 || !strings.Contains(p.Output(), tt.want) {
			t.Errorf("%q: exit %d, output %q; want a failure mentioning %q", tt.args, p.ExitCode(), p.Output(), tt.want)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestHuggingFaceTokenizer runs the simulator on a real Qwen3 tokenizer.json
// and chat template (from `make testdata`) and checks ids that Qwen's
// tokenizer is known to give.
func TestHuggingFaceTokenizer(t *testing.T) {
	dir := os.Getenv("LLMGW_TESTDATA") + "/models/qwen3"
	if _, err := os.Stat(dir + "/tokenizer.json"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Qwen3 tokenizer files missing in CI (make testdata): %v", err)
		}
		t.Skipf("Qwen3 tokenizer files not present (run make testdata): %v", err)
	}
	p := startSim(t, nil, "--tokenizer", dir)
	// The load shows in the log, so that a launcher can tell it from a hang.
	for _, line := range []string{`msg="loading tokenizer"`, `msg="loaded tokenizer"`} {
		if !strings.Contains(p.Output(), line) {
			t.Errorf("the log has no %q:\n%s", line, p.Output())
		}
	}
	var prompt, chat struct {
		Tokens []uint32 `json:"tokens"`
	}
	post(t, p.URL+"/tokenize", map[string]any{"prompt": "Hello world"}, &prompt)
	if !slices.Equal(prompt.Tokens, []uint32{9707, 1879}) {
		t.Errorf("Hello world tokenized to %v; want Qwen's [9707 1879]", prompt.Tokens)
	}
	post(t, p.URL+"/tokenize", map[string]any{"messages": []map[string]string{{"role": "user", "content": "Hello world"}}}, &chat)
	want := []uint32{151644, 872, 198, 9707, 1879, 151645, 198, 151644, 77091, 198}
	if !slices.Equal(chat.Tokens, want) {
		t.Errorf("chat tokenized to %v; want %v (<|im_start|>user\\nHello world<|im_end|>\\n<|im_start|>assistant\\n)", chat.Tokens, want)
	}
	c := complete(t, p, "Hello world", 8)
	if c.Usage.CompletionTokens != 8 || c.Choices[0].Text == "" {
		t.Errorf("completion with the Qwen tokenizer: %+v", c)
	}
}
