package prompt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/cmd/vllm-sim/simtokenizer"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/router/openai"
)

// TestTruncatePromptTokens: the replica keys the ids vLLM keeps after
// truncate_prompt_tokens (the last n by default, the first n with
// truncation_side "right"; -1, the model's limit, is unknown here and
// keeps the whole prompt).
func TestTruncatePromptTokens(t *testing.T) {
	t.Parallel()
	p, _ := New(map[string]Source{"sim": {Encoder: simencoder.Encoder{}}})
	prompt := strings.Repeat("keep only the tail of this prompt ", 20)
	ids := simtokenizer.Tokenizer{}.Encode(prompt, true)
	if len(ids) < 64 {
		t.Fatalf("prompt has %d tokens; the test needs at least 64", len(ids))
	}
	for _, tc := range []struct {
		name, extra string
		want        []uint32
	}{
		{"none", ``, ids},
		{"left", `,"truncate_prompt_tokens":32`, ids[len(ids)-32:]},
		{"right", `,"truncate_prompt_tokens":32,"truncation_side":"right"`, ids[:32]},
		{"longer than the prompt", `,"truncate_prompt_tokens":100000`, ids},
		{"model limit", `,"truncate_prompt_tokens":-1`, ids},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := parse(t, openai.Completion, `{"model":"sim","prompt":"`+prompt+`"`+tc.extra+`}`)
			got, err := p.Compute(req, 16)
			if err != nil {
				t.Fatal(err)
			}
			want := blockkey.PromptKeys(nil, "", "", tc.want, 16)
			if got.Tokens != len(tc.want) || len(got.Keys) != len(want) {
				t.Fatalf("%d tokens, %d keys; want %d and %d", got.Tokens, len(got.Keys), len(tc.want), len(want))
			}
			for i := range want {
				if got.Keys[i] != uint64(want[i]) {
					t.Fatalf("key %d differs", i)
				}
			}
		})
	}
}

// qwen3 loads the real Qwen3 tokenizer and chat template from the test data
// `make testdata` fetches.
func qwen3(t *testing.T) *Prompts {
	t.Helper()
	dir := os.Getenv("LLMGW_TESTDATA")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "llmgw", "testdata")
	}
	dir = filepath.Join(dir, "models", "qwen3")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is absent in CI: `make test` runs `make testdata` first", dir)
		}
		t.Skipf("%s is absent: run `make testdata` (or set LLMGW_TESTDATA)", dir)
	}
	p, errs := New(map[string]Source{"qwen3": {Dir: dir}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return p
}

// TestChatLikeVLLM runs chat requests through the real Qwen3 encoder: media
// parts route approximately, requests vLLM refuses are bad requests, and
// reasoning_effort "none" renders Qwen3's empty think block as vLLM does.
func TestChatLikeVLLM(t *testing.T) {
	t.Parallel()
	p := qwen3(t)
	long := strings.Repeat("describe the picture in detail ", 12)
	media := parse(t, openai.Chat, `{"model":"qwen3","messages":[{"role":"user","content":[{"type":"text","text":"`+long+`"},{"type":"image_url","image_url":{"url":"http://x/y.png"}}]}]}`)
	res, err := p.Compute(media, 16)
	if err != nil || res.Keys != nil || len(res.ApproxKeys) == 0 {
		t.Errorf("image request: keys %d, approx %d, err %v; want approximate keys only", len(res.Keys), len(res.ApproxKeys), err)
	}
	refused := parse(t, openai.Chat, `{"model":"qwen3","messages":[{"role":"user","content":"q"}],"tools":[]}`)
	if _, err := p.Compute(refused, 16); !errors.Is(err, openai.ErrBadRequest) || !strings.Contains(err.Error(), "tools") {
		t.Errorf("empty tools: %v; want a bad request naming tools", err)
	}
	plain := parse(t, openai.Chat, `{"model":"qwen3","messages":[{"role":"user","content":"q"}]}`)
	off := parse(t, openai.Chat, `{"model":"qwen3","messages":[{"role":"user","content":"q"}],"reasoning_effort":"none"}`)
	hf := p.encoder("qwen3")
	a, err1 := hf.RenderChat(plain)
	b, err2 := hf.RenderChat(off)
	if err1 != nil || err2 != nil || b != a+"<think>\n\n</think>\n\n" {
		t.Errorf("reasoning_effort none: render %q (%v); want the plain render %q (%v) plus an empty think block", b, err2, a, err1)
	}
	// vLLM drops a content part whose text is empty before joining the
	// parts with "\n" (Qwen3's template takes string content).
	parts := parse(t, openai.Chat, `{"model":"qwen3","messages":[{"role":"user","content":[{"type":"text","text":"A"},{"type":"text","text":""},"",{"type":"text","text":"B"}]}]}`)
	joined := parse(t, openai.Chat, `{"model":"qwen3","messages":[{"role":"user","content":"A\nB"}]}`)
	c, err1 := hf.RenderChat(parts)
	d, err2 := hf.RenderChat(joined)
	if err1 != nil || err2 != nil || c != d {
		t.Errorf("parts [A, \"\", \"\", B]: render %q (%v); want the render of \"A\\nB\" %q (%v)", c, err1, d, err2)
	}
}
