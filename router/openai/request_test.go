package openai

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind Kind
		body string
		want Request
		err  string
	}{
		{name: "chat", kind: Chat,
			body: `{"model":"m","stream":true,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]}]}`,
			want: Request{Kind: Chat, Model: "m", Stream: true, AddGenerationPrompt: true,
				Messages: []Message{{"system", "be brief"}, {"user", "a\nb"}}}},
		{name: "chat: empty parts dropped, bare strings read as text, as vLLM", kind: Chat,
			body: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"A"},{"type":"text","text":""},"","B"]}]}`,
			want: Request{Kind: Chat, Model: "m", AddGenerationPrompt: true, Messages: []Message{{"user", "A\nB"}}}},
		{name: "chat continue", kind: Chat,
			body: `{"model":"m","messages":[{"role":"assistant","content":null}],"add_generation_prompt":false,"continue_final_message":true,"add_special_tokens":true,"cache_salt":"s"}`,
			want: Request{Kind: Chat, Model: "m", ContinueFinal: true, AddSpecialTokens: true, CacheSalt: "s",
				Messages: []Message{{"assistant", ""}}}},
		{name: "completion text", kind: Completion, body: `{"model":"m","prompt":"hi"}`,
			want: Request{Kind: Completion, Model: "m", Prompt: "hi", AddSpecialTokens: true}},
		{name: "completion list", kind: Completion, body: `{"model":"m","prompt":["a","b"],"add_special_tokens":false}`,
			want: Request{Kind: Completion, Model: "m", Prompt: "a"}},
		{name: "completion ids", kind: Completion, body: `{"model":"m","prompt":[1,2,3]}`,
			want: Request{Kind: Completion, Model: "m", PromptIDs: []uint32{1, 2, 3}, AddSpecialTokens: true}},
		{name: "completion id lists", kind: Completion, body: `{"model":"m","prompt":[[4,5],[6]]}`,
			want: Request{Kind: Completion, Model: "m", PromptIDs: []uint32{4, 5}, AddSpecialTokens: true}},
		{name: "truncation", kind: Completion, body: `{"model":"m","prompt":"hi","truncate_prompt_tokens":5,"truncation_side":"right"}`,
			want: Request{Kind: Completion, Model: "m", Prompt: "hi", AddSpecialTokens: true, TruncatePromptTokens: ptr(5), TruncateRight: true}},
		{name: "max tokens", kind: Completion, body: `{"model":"m","prompt":"hi","max_tokens":50}`,
			want: Request{Kind: Completion, Model: "m", Prompt: "hi", AddSpecialTokens: true, MaxTokens: 50}},
		{name: "max completion tokens first", kind: Completion, body: `{"model":"m","prompt":"hi","max_tokens":50,"max_completion_tokens":7}`,
			want: Request{Kind: Completion, Model: "m", Prompt: "hi", AddSpecialTokens: true, MaxTokens: 7}},
		{name: "negative max tokens", kind: Chat, body: `{"model":"m","messages":[{"role":"user"}],"max_tokens":-1}`, err: "max_tokens must not be negative"},
		{name: "truncation side", kind: Chat, body: `{"model":"m","messages":[{"role":"user"}],"truncation_side":"middle"}`, err: "truncation_side"},
		{name: "truncation count", kind: Chat, body: `{"model":"m","messages":[{"role":"user"}],"truncate_prompt_tokens":-2}`, err: "truncate_prompt_tokens"},
		{name: "empty", kind: Chat, body: ` `, err: "body is empty"},
		{name: "not object", kind: Chat, body: `[1]`, err: "must be a JSON object"},
		{name: "malformed", kind: Chat, body: `{"model":`, err: "malformed JSON"},
		{name: "no model", kind: Chat, body: `{"messages":[{"role":"user","content":"x"}]}`, err: "model is required"},
		{name: "model type", kind: Chat, body: `{"model":3}`, err: "model must be a string"},
		{name: "stream type", kind: Completion, body: `{"model":"m","stream":"yes","prompt":"x"}`, err: "stream must be a boolean"},
		{name: "no messages", kind: Chat, body: `{"model":"m"}`, err: "messages is required"},
		{name: "empty messages", kind: Chat, body: `{"model":"m","messages":[]}`, err: "messages must not be empty"},
		{name: "no role", kind: Chat, body: `{"model":"m","messages":[{"content":"x"}]}`, err: "messages[0].role is required"},
		{name: "bad content", kind: Chat, body: `{"model":"m","messages":[{"role":"user","content":5}]}`, err: "messages[0].content"},
		{name: "both flags", kind: Chat, body: `{"model":"m","messages":[{"role":"user"}],"continue_final_message":true}`, err: "cannot set both"},
		{name: "no prompt", kind: Completion, body: `{"model":"m"}`, err: "prompt is required"},
		{name: "empty prompt list", kind: Completion, body: `{"model":"m","prompt":[]}`, err: "empty list"},
		{name: "bad prompt", kind: Completion, body: `{"model":"m","prompt":{"a":1}}`, err: "prompt must be"},
		{name: "negative id", kind: Completion, body: `{"model":"m","prompt":[-1]}`, err: "prompt must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.kind, []byte(tt.body))
			if tt.err != "" {
				if err == nil || !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v; want an ErrBadRequest containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(&tt.want, got, cmpopts.IgnoreFields(Request{}, "Body")); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestWriteError(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	WriteError(rec, 404, "model x does not exist")
	var got struct{ Error Error }
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 404 || got.Error.Type != TypeNotFound || got.Error.Message != "model x does not exist" || got.Error.Code != float64(404) {
		t.Errorf("got %d %+v", rec.Code, got.Error)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(uint8(0), []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`))
	f.Add(uint8(1), []byte(`{"model":"m","prompt":[[1,2]],"stream":true}`))
	f.Add(uint8(1), []byte(`{"model":"m","prompt":["x"]}`))
	f.Add(uint8(2), []byte(`{"model":"m","input":[{"role":"user","content":"x"}]}`))
	f.Add(uint8(5), []byte(`{"model":"m","data_1":["q"],"data_2":"d"}`))
	f.Fuzz(func(t *testing.T, k uint8, body []byte) {
		r, err := Parse(Kind(k%7), body)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("error %v does not wrap ErrBadRequest", err)
			}
			return
		}
		if r.Model == "" {
			t.Fatal("accepted a request without a model")
		}
	})
}

func ptr[T any](v T) *T { return &v }
