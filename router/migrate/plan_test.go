package migrate

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llmgw/llmgw/router/openai"
)

// continued is what the tests read of a continuation.
type continued struct {
	Prompt               []uint32          `json:"prompt"`
	Messages             []json.RawMessage `json:"messages"`
	MaxTokens            *int              `json:"max_tokens"`
	MaxCompletionTokens  *int              `json:"max_completion_tokens"`
	MinTokens            *int              `json:"min_tokens"`
	Seed                 int               `json:"seed"`
	ReturnTokenIDs       bool              `json:"return_token_ids"`
	ContinueFinalMessage bool              `json:"continue_final_message"`
	AddGenerationPrompt  *bool             `json:"add_generation_prompt"`
	AddSpecialTokens     *bool             `json:"add_special_tokens"`
}

func mustPlan(t testing.TB, kind openai.Kind, body any) *Plan {
	t.Helper()
	b, _ := json.Marshal(body)
	p, r, err := Check(kind, b)
	if err != nil || r != nil || p == nil {
		t.Fatalf("Check(%s) = %v, %v, %v; want a plan", b, p, r, err)
	}
	return p
}

// TestContinuationReconstructs: for random prompts and outputs and every
// split point, the continuation's prompt is the prompt and the output so
// far, and its max_tokens what is left (never below 1: at the limit there
// is no continuation).
func TestContinuationReconstructs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		prompt := make([]uint32, 1+rng.IntN(64))
		for i := range prompt {
			prompt[i] = rng.Uint32N(50000)
		}
		maxTokens := 1 + rng.IntN(40)
		out := make([]uint32, maxTokens)
		for i := range out {
			out[i] = rng.Uint32N(50000)
		}
		p := mustPlan(t, openai.Completion, map[string]any{"model": "m", "prompt": "some text", "stream": true, "max_tokens": maxTokens, "seed": 5, "min_tokens": 3})
		for k := 0; k <= maxTokens; k++ {
			b, r := p.Continue(Progress{PromptIDs: prompt, IDs: out[:k]})
			if k == maxTokens {
				if r == nil || r.Reason != ReasonExhausted {
					t.Fatalf("split %d of %d: %s, %v; want the exhausted refusal", k, maxTokens, b, r)
				}
				continue
			}
			if r != nil {
				t.Fatalf("split %d: refused: %v", k, r)
			}
			var c continued
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			whole := append(slices.Clone(prompt), out...)
			if got := append(c.Prompt, out[k:]...); !slices.Equal(got, whole) {
				t.Fatalf("split %d: continuation prompt + rest = %v; want %v", k, got, whole)
			}
			if c.MaxTokens == nil || *c.MaxTokens != maxTokens-k || *c.MaxTokens < 1 {
				t.Fatalf("split %d of %d: max_tokens %v", k, maxTokens, c.MaxTokens)
			}
			if c.MinTokens == nil || *c.MinTokens != max(3-k, 0) {
				t.Fatalf("split %d: min_tokens %v; want %d", k, c.MinTokens, max(3-k, 0))
			}
			if c.Seed != 5 || !c.ReturnTokenIDs || c.AddSpecialTokens == nil || *c.AddSpecialTokens {
				t.Fatalf("split %d: %s; want the seed kept, return_token_ids, no special tokens added", k, b)
			}
		}
	}
}

// TestChatContinuation: the partial answer becomes the final assistant
// message, or extends the client's own message to continue.
func TestChatContinuation(t *testing.T) {
	t.Parallel()
	user := map[string]string{"role": "user", "content": "hi"}
	cases := []struct {
		name     string
		body     map[string]any
		text     string
		wantLast string
		wantN    int // messages
		field    string
		left     int
	}{
		{"appended", map[string]any{"messages": []any{user}, "max_tokens": 10}, " the cache", " the cache", 2, "max_tokens", 7},
		{"completion tokens", map[string]any{"messages": []any{user}, "max_completion_tokens": 10, "max_tokens": 50}, "a", "a", 2, "max_completion_tokens", 7},
		{"continued", map[string]any{"messages": []any{user, map[string]string{"role": "assistant", "content": "Once"}},
			"continue_final_message": true, "add_generation_prompt": false}, " upon", "Once upon", 2, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.body["model"], tc.body["stream"] = "m", true
			p := mustPlan(t, openai.Chat, tc.body)
			b, r := p.Continue(Progress{IDs: []uint32{1, 2, 3}, Text: tc.text})
			if r != nil {
				t.Fatal(r)
			}
			var c continued
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			var last struct{ Role, Content string }
			_ = json.Unmarshal(c.Messages[len(c.Messages)-1], &last)
			if len(c.Messages) != tc.wantN || last.Role != "assistant" || last.Content != tc.wantLast {
				t.Errorf("messages %s; want %d, the last the assistant's %q", c.Messages, tc.wantN, tc.wantLast)
			}
			if !c.ContinueFinalMessage || c.AddGenerationPrompt == nil || *c.AddGenerationPrompt {
				t.Errorf("%s: want continue_final_message and no generation prompt", b)
			}
			switch tc.field {
			case "max_tokens":
				if c.MaxTokens == nil || *c.MaxTokens != tc.left {
					t.Errorf("max_tokens %v; want %d", c.MaxTokens, tc.left)
				}
			case "max_completion_tokens":
				if c.MaxCompletionTokens == nil || *c.MaxCompletionTokens != tc.left {
					t.Errorf("max_completion_tokens %v; want %d", c.MaxCompletionTokens, tc.left)
				}
			default:
				if c.MaxTokens != nil || c.MaxCompletionTokens != nil {
					t.Errorf("%s: a bound appeared that the client did not set", b)
				}
			}
		})
	}
}

// TestCheck: what is refused, what is planned, what is left alone.
func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		kind   openai.Kind
		body   string
		reason string // "": a plan; "-": nothing to plan (not a stream)
	}{
		{"stream", openai.Completion, `{"model":"m","prompt":"p","stream":true}`, ""},
		{"token ids", openai.Completion, `{"model":"m","prompt":[1,2,3],"stream":true}`, ""},
		{"n 1", openai.Completion, `{"prompt":"p","stream":true,"n":1,"echo":false,"logprobs":null}`, ""},
		{"not streamed", openai.Completion, `{"prompt":"p","n":3}`, "-"},
		{"stream false", openai.Chat, `{"messages":[],"stream":false}`, "-"},
		{"n 2", openai.Completion, `{"prompt":"p","stream":true,"n":2}`, ReasonN},
		{"chat n 2", openai.Chat, `{"messages":[{"role":"user","content":"x"}],"stream":true,"n":2}`, ReasonN},
		{"best_of", openai.Completion, `{"prompt":"p","stream":true,"best_of":3}`, ReasonBestOf},
		{"echo", openai.Completion, `{"prompt":"p","stream":true,"echo":true}`, ReasonEcho},
		{"logprobs 0", openai.Completion, `{"prompt":"p","stream":true,"logprobs":0}`, ReasonLogprobs},
		{"chat logprobs", openai.Chat, `{"messages":[{"role":"user","content":"x"}],"stream":true,"logprobs":true,"top_logprobs":2}`, ReasonLogprobs},
		{"suffix", openai.Completion, `{"prompt":"p","stream":true,"suffix":"end"}`, ReasonSuffix},
		{"json schema", openai.Chat, `{"messages":[{"role":"user","content":"x"}],"stream":true,"response_format":{"type":"json_object"}}`, ReasonStructured},
		{"guided", openai.Completion, `{"prompt":"p","stream":true,"guided_regex":"a+"}`, ReasonStructured},
		{"batch", openai.Completion, `{"prompt":["a","b"],"stream":true}`, ReasonBatch},
		{"batch of ids", openai.Completion, `{"prompt":[[1],[2]],"stream":true}`, ReasonBatch},
		{"embeds", openai.Completion, `{"prompt_embeds":"AAAA","stream":true}`, ReasonBatch},
		// vLLM's pydantic models read numbers leniently: 2.0 and "2" are n 2.
		{"n 2.0", openai.Completion, `{"prompt":"p","stream":true,"n":2.0}`, ReasonN},
		{"n as a string", openai.Chat, `{"messages":[{"role":"user","content":"x"}],"stream":true,"n":"2"}`, ReasonN},
		{"best_of 3.0", openai.Completion, `{"prompt":"p","stream":true,"best_of":3.0}`, ReasonBestOf},
		{"n 1.0", openai.Completion, `{"prompt":"p","stream":true,"n":1.0,"best_of":"1"}`, ""},
		// response_format text is no grammar (vLLM's
		// structured_outputs_from_response_format), top_logprobs 0 is
		// vLLM's default: neither changes what a continuation reproduces.
		{"response_format text", openai.Chat, `{"messages":[{"role":"user","content":"x"}],"stream":true,"response_format":{"type":"text"}}`, ""},
		{"chat top_logprobs 0", openai.Chat, `{"messages":[{"role":"user","content":"x"}],"stream":true,"logprobs":false,"top_logprobs":0}`, ""},
		{"json schema", openai.Completion, `{"prompt":"p","stream":true,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`, ReasonStructured},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, r, err := Check(tc.kind, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			switch tc.reason {
			case "":
				if p == nil || r != nil {
					t.Errorf("got %v, %v; want a plan", p, r)
				}
			case "-":
				if p != nil || r != nil {
					t.Errorf("got %v, %v; want nothing", p, r)
				}
			default:
				if r == nil || r.Reason != tc.reason || r.Detail == "" {
					t.Errorf("got %v, %v; want the %s refusal", p, r, tc.reason)
				}
			}
		})
	}
	for _, bad := range []string{`[1]`, `null`, `{"stream":`} {
		if _, _, err := Check(openai.Completion, []byte(bad)); err == nil {
			t.Errorf("Check(%s): no error", bad)
		}
	}
}

// TestForwardAsksForTokenIDs: the first replica is asked for token ids,
// and whether the client asked itself is remembered.
func TestForwardAsksForTokenIDs(t *testing.T) {
	t.Parallel()
	for _, asked := range []bool{false, true} {
		p := mustPlan(t, openai.Completion, map[string]any{"prompt": "p", "stream": true, "return_token_ids": asked, "extra_field": "kept"})
		var got struct {
			ReturnTokenIDs bool   `json:"return_token_ids"`
			Extra          string `json:"extra_field"`
		}
		if err := json.Unmarshal(p.Forward(), &got); err != nil || !got.ReturnTokenIDs || got.Extra != "kept" || p.ClientWantsTokenIDs() != asked {
			t.Errorf("asked %v: forward %s, client wants ids %v", asked, p.Forward(), p.ClientWantsTokenIDs())
		}
	}
}

// TestForwardKeepsClientBytes: the body the first replica gets is the
// client's, byte for byte, with return_token_ids put in front; a body
// that set the field itself to something else is encoded again, with the
// field true once.
func TestForwardKeepsClientBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, want string }{
		{`{"stream":true,"prompt":"p"}`, `{"return_token_ids":true,"stream":true,"prompt":"p"}`},
		{"  {\n \"stream\" : true, \"prompt\":\"p\\u00e9\"}\n", "  {\"return_token_ids\":true,\n \"stream\" : true, \"prompt\":\"p\\u00e9\"}\n"},
		{`{"stream":true,"prompt":"p","return_token_ids":true}`, `{"stream":true,"prompt":"p","return_token_ids":true}`},
		{`{"stream":true,"prompt":"p","return_token_ids":false}`, `{"prompt":"p","return_token_ids":true,"stream":true}`},
		{`{"stream":true,"prompt":"p","return_token_ids":null}`, `{"prompt":"p","return_token_ids":true,"stream":true}`},
	} {
		p, r, err := Check(openai.Completion, []byte(tc.body))
		if err != nil || r != nil || p == nil {
			t.Fatalf("Check(%s) = %v, %v, %v", tc.body, p, r, err)
		}
		if got := string(p.Forward()); got != tc.want {
			t.Errorf("Forward(%s) =\n%s\nwant\n%s", tc.body, got, tc.want)
		}
	}
}

// TestContinuationDropsKVTransferParams: a disaggregated decode step's
// kv_transfer_params name blocks already read from the prefill replica;
// the continuation, for completions and chat, carries none, and keeps
// the rest of the request.
func TestContinuationDropsKVTransferParams(t *testing.T) {
	t.Parallel()
	params := map[string]any{"do_remote_prefill": true, "remote_engine_id": "e1", "remote_block_ids": [][]int{{0, 1}}}
	for _, tc := range []struct {
		kind openai.Kind
		body map[string]any
	}{
		{openai.Completion, map[string]any{"prompt": "p", "stream": true, "max_tokens": 10, "seed": 7, "kv_transfer_params": params}},
		{openai.Chat, map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}, "stream": true, "max_tokens": 10, "seed": 7, "kv_transfer_params": params}},
	} {
		p := mustPlan(t, tc.kind, tc.body)
		b, r := p.Continue(Progress{PromptIDs: []uint32{5, 6}, IDs: []uint32{1, 2}, Text: "ab"})
		if r != nil {
			t.Fatalf("%v: refused %v", tc.kind, r)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if _, ok := got["kv_transfer_params"]; ok {
			t.Errorf("%v: continuation %s carries kv_transfer_params", tc.kind, b)
		}
		if string(got["seed"]) != "7" || string(got["max_tokens"]) != "8" {
			t.Errorf("%v: continuation %s; want seed 7 and max_tokens 8 kept", tc.kind, b)
		}
	}
}

// TestCompletionsMaxTokens: vLLM's /v1/completions defaults max_tokens to
// 16 when the field is absent, but an explicit null means no limit (what
// is left of the context), as for chat; the continuation keeps each.
func TestCompletionsMaxTokens(t *testing.T) {
	t.Parallel()
	ids := make([]uint32, 20)
	cases := []struct {
		name string
		body string
		left string // the continuation's max_tokens; "": a refusal, "null": none
	}{
		{"absent: 16", `{"prompt":"p","stream":true}`, ""},
		{"null: unbounded", `{"prompt":"p","stream":true,"max_tokens":null}`, "null"},
		{"set", `{"prompt":"p","stream":true,"max_tokens":25}`, "5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, r, err := Check(openai.Completion, []byte(tc.body))
			if err != nil || r != nil || p == nil {
				t.Fatalf("Check: %v, %v, %v", p, r, err)
			}
			b, r := p.Continue(Progress{PromptIDs: []uint32{7}, IDs: ids})
			if tc.left == "" {
				if r == nil || r.Reason != ReasonExhausted {
					t.Fatalf("continuation %s, %v; want the exhausted refusal", b, r)
				}
				return
			}
			if r != nil {
				t.Fatalf("refused: %v", r)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if string(got["max_tokens"]) != tc.left {
				t.Errorf("continuation %s: max_tokens %s; want %s", b, got["max_tokens"], tc.left)
			}
		})
	}
}

// TestContinuationTruncation: vLLM truncates the prompt it renders to
// truncate_prompt_tokens. A completions continuation's prompt is the ids
// the engine reported, already truncated, so it asks for no truncation
// (it would cut the prompt's head again, by the tokens generated); a chat
// continuation renders the partial answer too, so its window grows by it.
func TestContinuationTruncation(t *testing.T) {
	t.Parallel()
	pr := Progress{PromptIDs: []uint32{1, 2, 3, 4}, IDs: []uint32{9, 9, 9}, Text: "abc"}
	for _, tc := range []struct {
		kind openai.Kind
		body string
		want string // the continuation's truncate_prompt_tokens; "": none
	}{
		{openai.Completion, `{"prompt":"p","stream":true,"max_tokens":10,"truncate_prompt_tokens":4}`, ""},
		{openai.Chat, `{"messages":[{"role":"user","content":"x"}],"stream":true,"truncate_prompt_tokens":100}`, "103"},
		{openai.Chat, `{"messages":[{"role":"user","content":"x"}],"stream":true,"truncate_prompt_tokens":-1}`, "-1"},
		{openai.Chat, `{"messages":[{"role":"user","content":"x"}],"stream":true}`, ""},
	} {
		p, r, err := Check(tc.kind, []byte(tc.body))
		if err != nil || r != nil {
			t.Fatalf("%s: %v, %v", tc.body, r, err)
		}
		b, r := p.Continue(pr)
		if r != nil {
			t.Fatalf("%s: refused %v", tc.body, r)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if string(got["truncate_prompt_tokens"]) != tc.want {
			t.Errorf("%s: continuation %s; want truncate_prompt_tokens %q", tc.body, b, tc.want)
		}
	}
}
