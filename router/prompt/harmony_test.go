package prompt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/testkit/gptoss"
	"github.com/llmgw/llmgw/router/harmony"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/tokenizer"
)

// TestHarmonyKeys: a directory whose config.json names gpt_oss renders
// chat prompts with Harmony (on the router's UTC date) and keys the ids the
// gpt-oss tokenizer gives that text; reasoning_effort changes the system
// message at the start of the prompt, so every key from there on.
func TestHarmonyKeys(t *testing.T) {
	dir := gptoss.ModelDir(t)
	h, err := LoadHF(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.Renderer() != RendererHarmony {
		t.Fatalf("renderer %q; want harmony", h.Renderer())
	}
	now := time.Date(2026, 3, 4, 23, 59, 59, 0, time.FixedZone("UTC-5", -5*3600)) // 2026-03-05 in UTC
	h.now = func() time.Time { return now }
	p, _ := New(map[string]Source{"gptoss": {Encoder: h}})
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]uint64{}
	for _, effort := range []string{"low", "medium", "high"} {
		body := `{"model":"gptoss","reasoning_effort":"` + effort + `","messages":[{"role":"user","content":"Summarise the history of the printing press in three paragraphs, please."}]}`
		res, err := p.Compute(parse(t, openai.Chat, body), 16)
		if err != nil {
			t.Fatal(err)
		}
		text, err := harmony.RenderChat([]byte(body), harmony.Options{Date: "2026-03-05"})
		if err != nil {
			t.Fatal(err)
		}
		ids := tok.Encode(text, false)
		if want := toU64(blockkey.PromptKeys(nil, "", "", ids, 16)); res.Tokens != len(ids) || !slices.Equal(res.Keys, want) {
			t.Fatalf("effort %s: %d tokens, keys %v; want %d, %v", effort, res.Tokens, res.Keys, len(ids), want)
		}
		keys[effort] = res.Keys
	}
	// The effort is in the system message, the prompt's first ~40 tokens:
	// from its block on, no key is shared.
	for _, pair := range [][2]string{{"low", "medium"}, {"medium", "high"}, {"low", "high"}} {
		a, b := keys[pair[0]], keys[pair[1]]
		first := slices.IndexFunc(a, func(k uint64) bool { return !slices.Contains(b, k) })
		if first < 0 || first > 2 || slices.ContainsFunc(a[first:], func(k uint64) bool { return slices.Contains(b, k) }) {
			t.Errorf("%s and %s keys diverge at block %d of %d; want from the system message on", pair[0], pair[1], first, len(a))
		}
	}
}

// TestHarmonyDate: the date is the router's, in UTC, unless pinned; a
// pinned date (the engines' VLLM_SYSTEM_START_DATE) ignores the clock.
func TestHarmonyDate(t *testing.T) {
	h, err := LoadHF(gptoss.ModelDir(t))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"messages":[{"role":"user","content":"Hi"}]}`
	render := func(now time.Time) string {
		h.now = func() time.Time { return now }
		s, err := h.RenderChat(&openai.Request{Kind: openai.Chat, Body: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := func(date string) string {
		s, _ := harmony.RenderChat([]byte(body), harmony.Options{Date: date})
		return s
	}
	before := time.Date(2026, 3, 4, 23, 59, 59, 0, time.UTC)
	if got := render(before); got != want("2026-03-04") {
		t.Errorf("before midnight: %q", got)
	}
	if got := render(before.Add(time.Second)); got != want("2026-03-05") {
		t.Errorf("after midnight: %q", got)
	}
	h.PinStartDate("2025-01-01")
	if got := render(before); got != want("2025-01-01") {
		t.Errorf("pinned: %q", got)
	}
}

// TestHarmonyApprox: a request the Harmony renderer cannot vouch for is
// keyed approximately, not refused and not keyed exactly.
func TestHarmonyApprox(t *testing.T) {
	h, err := LoadHF(gptoss.ModelDir(t))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := New(map[string]Source{"gptoss": {Encoder: h}})
	res, err := p.Compute(parse(t, openai.Chat, `{"model":"gptoss","reasoning_effort":"none","messages":[{"role":"user","content":"Hi"}]}`), 16)
	if err != nil || res.Keys != nil || res.Tokens == 0 {
		t.Errorf("keys %v, %d tokens, err %v; want approximate keys", res.Keys, res.Tokens, err)
	}
}

// TestMistralFormat: a tokenizer directory vLLM would load with
// mistral_common is not loaded as a Hugging Face tokenizer; with
// engine_tokenize the model is keyed on its engines instead.
func TestMistralFormat(t *testing.T) {
	for _, file := range []string{"tekken.json", "tokenizer.model.v3"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, file), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadHF(dir); !errors.Is(err, ErrMistralFormat) {
			t.Errorf("%s: LoadHF error %v; want ErrMistralFormat", file, err)
		}
		rem := &fixedRemote{ids: []uint32{1, 2, 3, 4}}
		p, errs := New(map[string]Source{"mistral": {Dir: dir, Remote: rem}})
		if len(errs) != 1 || !errors.Is(errs[0], ErrMistralFormat) {
			t.Errorf("%s: load errors %v", file, errs)
		}
		res, err := p.ComputeContext(context.Background(), parse(t, openai.Chat, `{"model":"mistral","messages":[{"role":"user","content":"Hi"}]}`), Target{Model: "mistral", BlockSize: 2})
		if err != nil || len(res.Keys) != 2 || rem.calls != 1 {
			t.Errorf("%s: keys %v, %d engine calls, err %v; want the engine's ids keyed", file, res.Keys, rem.calls, err)
		}
	}
}

// TestHarmonyNotOnEngines: a gpt-oss model tokenized on its engines keys
// chat prompts approximately (vLLM's /tokenize renders Jinja, its chat path
// Harmony) and completions exactly.
func TestHarmonyNotOnEngines(t *testing.T) {
	rem := &fixedRemote{ids: []uint32{1, 2, 3, 4}}
	p, _ := New(map[string]Source{"openai/gpt-oss-20b": {Remote: rem}})
	ctx := context.Background()
	chat, err := p.ComputeContext(ctx, parse(t, openai.Chat, `{"model":"openai/gpt-oss-20b","messages":[{"role":"user","content":"Hi"}]}`), Target{Model: "openai/gpt-oss-20b", BlockSize: 2})
	if err != nil || chat.Keys != nil || rem.calls != 0 {
		t.Errorf("chat: keys %v, %d engine calls, err %v; want approximate keys and no call", chat.Keys, rem.calls, err)
	}
	cmpl, err := p.ComputeContext(ctx, parse(t, openai.Completion, `{"model":"openai/gpt-oss-20b","prompt":"Hi"}`), Target{Model: "openai/gpt-oss-20b", BlockSize: 2})
	if err != nil || len(cmpl.Keys) != 2 || rem.calls != 1 {
		t.Errorf("completion: keys %v, %d engine calls, err %v; want the engine's ids keyed", cmpl.Keys, rem.calls, err)
	}
}

// fixedRemote answers every tokenization with ids.
type fixedRemote struct {
	ids   []uint32
	calls int
}

func (f *fixedRemote) Tokenize(context.Context, string, *openai.Request) ([]uint32, error) {
	f.calls++
	return f.ids, nil
}

func toU64(keys []blockkey.Key) []uint64 {
	out := make([]uint64, len(keys))
	for i, k := range keys {
		out[i] = uint64(k)
	}
	return out
}

// TestDetectRenderer: the renderer follows vLLM's choice for the files a
// model directory holds.
func TestDetectRenderer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
		err   error
	}{
		{"tokenizer files only", nil, RendererJinja, nil},
		{"gpt-oss", map[string]string{"config.json": `{"model_type":"gpt_oss"}`}, RendererHarmony, nil},
		{"another model", map[string]string{"config.json": `{"model_type":"qwen3"}`}, RendererJinja, nil},
		{"unreadable config", map[string]string{"config.json": `{`}, RendererJinja, nil},
		{"tekken", map[string]string{"tekken.json": `{}`, "config.json": `{"model_type":"mistral"}`}, "", ErrMistralFormat},
		{"sentencepiece v7", map[string]string{"tokenizer.model.v7": ``}, "", ErrMistralFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := detectRenderer(dir)
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("detectRenderer = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestHarmonyStartDateSource: a model's configured Harmony date is pinned
// on the encoder loaded from its directory.
func TestHarmonyStartDateSource(t *testing.T) {
	dir := gptoss.ModelDir(t)
	p, errs := New(map[string]Source{"gptoss": {Dir: dir, HarmonyStartDate: "2025-08-05"}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	body := []byte(`{"model":"gptoss","messages":[{"role":"user","content":"Hi"}]}`)
	got, err := p.encoder("gptoss").RenderChat(&openai.Request{Kind: openai.Chat, Body: body})
	want, _ := harmony.RenderChat(body, harmony.Options{Date: "2025-08-05"})
	if err != nil || got != want {
		t.Errorf("rendered %q (%v); want %q", got, err, want)
	}
}

// TestHarmonyResponsesApprox: a gpt-oss request that came through the
// Responses API is keyed approximately, since vLLM renders it on its own
// Harmony path; the same conversation as a chat completion keeps exact
// keys.
func TestHarmonyResponsesApprox(t *testing.T) {
	h, err := LoadHF(gptoss.ModelDir(t))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := New(map[string]Source{"gptoss": {Encoder: h}})
	body := `{"model":"gptoss","messages":[{"role":"user","content":"Plan a three-day trip to Lisbon with a budget for each day."}]}`
	for _, tc := range []struct {
		name      string
		responses bool
		exact     bool
	}{
		{"chat completion", false, true},
		{"responses", true, false},
	} {
		r := parse(t, openai.Chat, body)
		r.Responses = tc.responses
		res, err := p.Compute(r, 16)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if exact := len(res.Keys) > 0 && res.ApproxKeys == nil; exact != tc.exact {
			t.Errorf("%s: %d exact keys, %d approx keys; want exact %v", tc.name, len(res.Keys), len(res.ApproxKeys), tc.exact)
		}
	}
}
