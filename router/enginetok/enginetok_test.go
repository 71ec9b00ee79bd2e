package enginetok

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
)

func parse(t *testing.T, kind openai.Kind, body string) *openai.Request {
	t.Helper()
	r, err := openai.Parse(kind, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var long = strings.Repeat("the quick brown fox jumps over the lazy dog. ", 12)

// TestSameKeysAsSimTokenizer: a real vllm-sim's /tokenize keys every form
// of prompt exactly as the simulator's tokenizer does in process, so a
// sim model routed through its engines lands on the blocks they cache.
func TestSameKeysAsSimTokenizer(t *testing.T) {
	set := replicaSet(startSim(t))
	var logs logBuffer
	c := newClient(t, set, &logs, nil)
	engine, errs := prompt.New(map[string]prompt.Source{model: {Remote: c}})
	local, _ := prompt.New(map[string]prompt.Source{model: {Encoder: simencoder.Encoder{}}})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	msg := `[{"role":"system","content":"be brief"},{"role":"user","content":"` + long + `"}]`
	for _, tc := range []struct {
		name string
		kind openai.Kind
		body string
		lora string
	}{
		{"completion, special tokens by default", openai.Completion, `{"model":"sim-model","prompt":"` + long + `"}`, ""},
		{"completion without special tokens", openai.Completion, `{"model":"sim-model","prompt":"` + long + `","add_special_tokens":false}`, ""},
		{"chat with the generation prompt", openai.Chat, `{"model":"sim-model","messages":` + msg + `}`, ""},
		{"chat continuing the final message", openai.Chat, `{"model":"sim-model","messages":` + msg + `,"add_generation_prompt":false,"continue_final_message":true}`, ""},
		{"chat with special tokens", openai.Chat, `{"model":"sim-model","messages":` + msg + `,"add_special_tokens":true}`, ""},
		{"chat with content parts", openai.Chat, `{"model":"sim-model","messages":[{"role":"user","content":[{"type":"text","text":"` + long + `"},{"type":"text","text":"more"}]}]}`, ""},
		{"salted chat", openai.Chat, `{"model":"sim-model","cache_salt":"s1","messages":` + msg + `}`, ""},
		{"an adapter's completion", openai.Completion, `{"model":"sql-lora","prompt":"` + long + `"}`, "sql-lora"},
		{"truncated completion", openai.Completion, `{"model":"sim-model","prompt":"` + long + `","truncate_prompt_tokens":40}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := parse(t, tc.kind, tc.body)
			target := prompt.Target{Model: model, LoRA: tc.lora, BlockSize: 16}
			got, err := engine.ComputeContext(context.Background(), r, target)
			if err != nil || got.RemoteErr != nil {
				t.Fatalf("engine: %v, remote error %v", err, got.RemoteErr)
			}
			want, err := local.ComputeFor(r, target)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Keys) == 0 || !slices.Equal(got.Keys, want.Keys) || got.Tokens != want.Tokens {
				t.Errorf("engine keys %d (%d tokens); want the sim tokenizer's %d (%d tokens), equal", len(got.Keys), got.Tokens, len(want.Keys), want.Tokens)
			}
		})
	}
	if n := testutil.ToFloat64(c.calls.WithLabelValues(model, "ok")); n != 9 {
		t.Errorf("llmgw_engine_tokenize_total{result=ok} = %v; want 9", n)
	}
	if strings.Contains(logs.String(), "failed") {
		t.Errorf("logged a failure: %s", logs.String())
	}
}

// TestFailureRoutesApprox: whatever goes wrong on the way to /tokenize, the
// request is keyed approximately on its text, with an error naming the
// problem, counted, and logged once per failing spell.
func TestFailureRoutesApprox(t *testing.T) {
	sim := startSim(t)
	status := func(code int, body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			io.WriteString(w, body)
		}))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	// It reads the body first: only then does the server notice the
	// client hanging up, which ends the request's context.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	for _, tc := range []struct {
		name string
		addr []string // none: the model has no replica
		edit func(*Options)
		want string
	}{
		{"no replica", nil, nil, "no ready replica"},
		{"connection refused", []string{deadAddr(t)}, nil, "connection refused"},
		{"engine error", []string{status(500, `{"error":{"message":"boom"}}`)}, nil, "500 Internal Server Error: {\"error\":{\"message\":\"boom\"}}"},
		{"not JSON", []string{status(200, `<html>`)}, nil, "tokenize response: invalid character"},
		{"count disagrees", []string{status(200, `{"count":3,"max_model_len":8,"tokens":[1,2]}`)}, nil, "count 3 but 2 tokens"},
		{"response too large", []string{sim}, func(o *Options) { o.MaxResponseBytes = 64 }, "response over 64 bytes"},
		{"timeout", []string{strings.TrimPrefix(hang.URL, "http://")}, func(o *Options) { o.Timeout = 50 * time.Millisecond }, "deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs logBuffer
			c := newClient(t, replicaSet(tc.addr...), &logs, tc.edit)
			p, _ := prompt.New(map[string]prompt.Source{model: {Remote: c}})
			r := parse(t, openai.Completion, `{"model":"sim-model","prompt":"`+long+`"}`)
			for range 2 {
				res, err := p.ComputeContext(context.Background(), r, prompt.Target{Model: model, BlockSize: 16})
				if err != nil {
					t.Fatalf("a failed tokenization failed the request: %v", err)
				}
				if res.Keys != nil || len(res.ApproxKeys) == 0 || res.RemoteErr == nil || !strings.Contains(res.RemoteErr.Error(), tc.want) {
					t.Fatalf("keys %d approx %d error %v; want approx keys and an error containing %q", len(res.Keys), len(res.ApproxKeys), res.RemoteErr, tc.want)
				}
			}
			if n := testutil.ToFloat64(c.calls.WithLabelValues(model, "error")); n != 2 {
				t.Errorf("llmgw_engine_tokenize_total{result=error} = %v; want 2", n)
			}
			if n := strings.Count(logs.String(), "engine tokenization failed"); n != 1 {
				t.Errorf("logged the failure %d times; want once:\n%s", n, logs.String())
			}
		})
	}
}

// TestRecovers: a model whose engines start answering is keyed exactly
// again, and the router says so.
func TestRecovers(t *testing.T) {
	sim := startSim(t)
	set := replicaSet(deadAddr(t))
	var logs logBuffer
	c := newClient(t, set, &logs, nil)
	p, _ := prompt.New(map[string]prompt.Source{model: {Remote: c}})
	r := parse(t, openai.Completion, `{"model":"sim-model","prompt":"`+long+`"}`)
	if res, _ := p.ComputeContext(context.Background(), r, prompt.Target{Model: model, BlockSize: 16}); res.RemoteErr == nil {
		t.Fatal("a dead replica tokenized")
	}
	set = replicaSet(sim)
	c.o.Replicas = set
	if res, _ := p.ComputeContext(context.Background(), r, prompt.Target{Model: model, BlockSize: 16}); res.RemoteErr != nil || len(res.Keys) == 0 {
		t.Fatalf("live replica: %d keys, error %v", len(res.Keys), res.RemoteErr)
	}
	if !strings.Contains(logs.String(), "engine tokenization works again") {
		t.Errorf("no recovery line in the log:\n%s", logs.String())
	}
}

// TestRequestShape: the call carries the model's engine key as proxied
// requests do, and spells out every flag vLLM would otherwise default.
func TestRequestShape(t *testing.T) {
	t.Parallel()
	type seen struct {
		auth string
		body map[string]any
	}
	got := make(chan seen, 4)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		got <- seen{r.Header.Get("Authorization"), b}
		io.WriteString(w, `{"count":2,"max_model_len":100,"tokens":[7,9]}`)
	}))
	t.Cleanup(s.Close)
	var logs logBuffer
	c := newClient(t, replicaSet(strings.TrimPrefix(s.URL, "http://")), &logs, func(o *Options) {
		o.EngineKey = func(m string) string { return "key-of-" + m }
	})
	chat := parse(t, openai.Chat, `{"model":"sim-model","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"chat_template_kwargs":{"enable_thinking":false}}`)
	ids, err := c.Tokenize(context.Background(), model, chat)
	if err != nil || !slices.Equal(ids, []uint32{7, 9}) {
		t.Fatalf("ids %v, error %v; want [7 9]", ids, err)
	}
	req := <-got
	if req.auth != "Bearer key-of-sim-model" {
		t.Errorf("Authorization %q; want the model's engine key", req.auth)
	}
	for _, k := range []string{"model", "messages", "tools", "chat_template_kwargs", "add_generation_prompt", "continue_final_message", "add_special_tokens"} {
		if _, ok := req.body[k]; !ok {
			t.Errorf("chat tokenize body lacks %s: %v", k, req.body)
		}
	}
	if req.body["add_generation_prompt"] != true || req.body["add_special_tokens"] != false {
		t.Errorf("chat flags %v; want vLLM's chat defaults spelled out", req.body)
	}
	c.o.EngineKey = func(string) string { return "" }
	done := parse(t, openai.Completion, `{"model":"sim-model","prompt":"hi"}`)
	if _, err := c.Tokenize(context.Background(), model, done); err != nil {
		t.Fatal(err)
	}
	req = <-got
	if req.auth != "" || req.body["prompt"] != "hi" || req.body["add_special_tokens"] != true {
		t.Errorf("completion: Authorization %q body %v; want none and the prompt with special tokens", req.auth, req.body)
	}
}

// TestMediaStaysLocal: a chat with media parts is keyed approximately
// without asking the engine, which would fetch the media.
func TestMediaStaysLocal(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	c := newClient(t, replicaSet(deadAddr(t)), &logs, nil)
	p, _ := prompt.New(map[string]prompt.Source{model: {Remote: c}})
	r := parse(t, openai.Chat, `{"model":"sim-model","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://example.invalid/x.png"}},{"type":"text","text":"`+long+`"}]}]}`)
	res, err := p.ComputeContext(context.Background(), r, prompt.Target{Model: model, BlockSize: 16})
	if err != nil || res.Keys != nil || len(res.ApproxKeys) == 0 || res.RemoteErr != nil {
		t.Fatalf("keys %d approx %d remote error %v err %v; want approx keys and no call", len(res.Keys), len(res.ApproxKeys), res.RemoteErr, err)
	}
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("%d tokenize calls counted; want none", n)
	}
}
