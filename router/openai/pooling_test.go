package openai

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestParsePooling: the pooling endpoints parse into a completion-shaped
// request keyed by the first input (vLLM's request models in
// vllm/entrypoints/pooling/*/protocol.py), with errors naming the field.
func TestParsePooling(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind Kind
		body string
		want Request
		err  string
	}{
		{name: "embeddings text", kind: Embeddings, body: `{"model":"e","input":"hello"}`,
			want: Request{Kind: Embeddings, Model: "e", Prompt: "hello", AddSpecialTokens: true}},
		{name: "embeddings list, the first decides", kind: Embeddings, body: `{"model":"e","input":["a","b"],"add_special_tokens":false}`,
			want: Request{Kind: Embeddings, Model: "e", Prompt: "a"}},
		{name: "embeddings ids", kind: Embeddings, body: `{"model":"e","input":[[7,8],[9]]}`,
			want: Request{Kind: Embeddings, Model: "e", PromptIDs: []uint32{7, 8}, AddSpecialTokens: true}},
		{name: "embeddings conversation in input", kind: Embeddings, body: `{"model":"e","input":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`,
			want: Request{Kind: Embeddings, Model: "e", Prompt: "hi\nyo", Messages: []Message{{"user", "hi"}, {"assistant", "yo"}}}},
		{name: "pooling messages", kind: Pooling, body: `{"model":"e","messages":[{"role":"user","content":"hi"}],"add_special_tokens":true}`,
			want: Request{Kind: Pooling, Model: "e", Prompt: "hi", AddSpecialTokens: true, Messages: []Message{{"user", "hi"}}}},
		{name: "classify with salt and truncation", kind: Classify, body: `{"model":"c","input":"x","cache_salt":"s","truncate_prompt_tokens":3}`,
			want: Request{Kind: Classify, Model: "c", Prompt: "x", AddSpecialTokens: true, CacheSalt: "s", TruncatePromptTokens: ptr(3)}},
		{name: "score queries and documents", kind: Score, body: `{"model":"e","queries":"q","documents":["d1","d2"]}`,
			want: Request{Kind: Score, Model: "e", Prompt: "q", AddSpecialTokens: true}},
		{name: "score data lists", kind: Score, body: `{"model":"e","data_1":["q1","q2"],"data_2":["d1","d2"]}`,
			want: Request{Kind: Score, Model: "e", Prompt: "q1", AddSpecialTokens: true}},
		{name: "score text", kind: Score, body: `{"model":"e","text_1":"q","text_2":"d"}`,
			want: Request{Kind: Score, Model: "e", Prompt: "q", AddSpecialTokens: true}},
		{name: "score queries and items", kind: Score, body: `{"model":"e","queries":"q","items":["d"]}`,
			want: Request{Kind: Score, Model: "e", Prompt: "q", AddSpecialTokens: true}},
		{name: "rerank", kind: Rerank, body: `{"model":"e","query":"q","documents":["d1"],"top_n":1}`,
			want: Request{Kind: Rerank, Model: "e", Prompt: "q", AddSpecialTokens: true}},
		{name: "no input", kind: Embeddings, body: `{"model":"e"}`, err: "input is required"},
		{name: "bad input", kind: Classify, body: `{"model":"e","input":{"a":1}}`, err: "input must be"},
		{name: "empty input list", kind: Pooling, body: `{"model":"e","input":[]}`, err: "input must be"},
		{name: "bad conversation", kind: Embeddings, body: `{"model":"e","messages":[{"content":"x"}]}`, err: "messages[0].role is required"},
		{name: "score without documents", kind: Score, body: `{"model":"e","queries":"q"}`, err: "queries and documents"},
		{name: "score without sides", kind: Score, body: `{"model":"e"}`, err: "data_1 and data_2"},
		{name: "score data without data_2", kind: Score, body: `{"model":"e","data_1":"q"}`, err: "data_1 and data_2 are required"},
		{name: "rerank without query", kind: Rerank, body: `{"model":"e","documents":["d"]}`, err: "query and documents are required"},
		{name: "rerank query type", kind: Rerank, body: `{"model":"e","query":5,"documents":["d"]}`, err: "query side"},
		{name: "no model", kind: Embeddings, body: `{"input":"x"}`, err: "model is required"},
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
			if string(got.Body) != tt.body {
				t.Errorf("body %q; want the body as received", got.Body)
			}
		})
	}
}

func TestKindIsPooling(t *testing.T) {
	t.Parallel()
	for k, want := range map[Kind]bool{Chat: false, Completion: false, Embeddings: true, Pooling: true, Classify: true, Score: true, Rerank: true} {
		if k.IsPooling() != want {
			t.Errorf("kind %d: IsPooling %v; want %v", k, !want, want)
		}
	}
}
