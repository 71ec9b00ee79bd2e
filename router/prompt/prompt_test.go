package prompt

import (
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/cmd/vllm-sim/simtokenizer"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/router/openai"
)

func parse(t *testing.T, kind openai.Kind, body string) *openai.Request {
	t.Helper()
	r, err := openai.Parse(kind, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestComputeSim(t *testing.T) {
	t.Parallel()
	p, errs := New(map[string]Source{"sim": {Encoder: simencoder.Encoder{}}, "broken": {Dir: t.TempDir()}})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "model broken") {
		t.Errorf("load errors %v; want one naming model broken", errs)
	}
	if !p.Has("sim") || p.Has("broken") {
		t.Errorf("Has: sim %v broken %v", p.Has("sim"), p.Has("broken"))
	}
	long := strings.Repeat("the quick brown fox jumps over the lazy dog ", 20)
	chat := parse(t, openai.Chat, `{"model":"sim","messages":[{"role":"user","content":"`+long+`"}]}`)
	res, err := p.Compute(chat, 16)
	if err != nil {
		t.Fatal(err)
	}
	text := simtokenizer.RenderChat([]simtokenizer.Message{{Role: "user", Content: long}}, true, false)
	ids := simtokenizer.Tokenizer{}.Encode(text, false)
	want := blockkey.PromptKeys(nil, "", "", ids, 16)
	if res.Tokens != len(ids) || len(res.Keys) != len(want) || len(want) == 0 {
		t.Fatalf("tokens %d keys %d; want %d and %d", res.Tokens, len(res.Keys), len(ids), len(want))
	}
	for i := range want {
		if res.Keys[i] != uint64(want[i]) {
			t.Fatalf("key %d differs", i)
		}
	}
	// A salt changes every key; token-id prompts are hashed as given.
	salted := parse(t, openai.Chat, `{"model":"sim","cache_salt":"x","messages":[{"role":"user","content":"`+long+`"}]}`)
	rs, _ := p.Compute(salted, 16)
	if rs.Keys[0] == res.Keys[0] {
		t.Errorf("cache_salt did not change the first key")
	}
	idsReq := parse(t, openai.Completion, `{"model":"unconfigured","prompt":[1,2,3,4,5,6,7,8]}`)
	ri, _ := p.Compute(idsReq, 4)
	if len(ri.Keys) != 2 || ri.Tokens != 8 {
		t.Errorf("token-id prompt: %d keys %d tokens; want 2 and 8", len(ri.Keys), ri.Tokens)
	}
}

func TestComputeApprox(t *testing.T) {
	t.Parallel()
	p, _ := New(nil)
	text := strings.Repeat("abcdefgh", 40) // 320 bytes: 5 chunks
	r := parse(t, openai.Completion, `{"model":"m","prompt":"`+text+`"}`)
	res, err := p.Compute(r, 16)
	if err != nil {
		t.Fatal(err)
	}
	if res.Keys != nil || len(res.ApproxKeys) != 5 {
		t.Fatalf("keys %v approx %d; want nil and 5", res.Keys, len(res.ApproxKeys))
	}
	// Chained: a prompt sharing only the first chunk shares only the first key.
	other := TextKeys(nil, text[:TextChunk]+strings.Repeat("z", 4*TextChunk))
	if other[0] != res.ApproxKeys[0] || other[1] == res.ApproxKeys[1] {
		t.Errorf("text keys are not a prefix chain")
	}
}

// TestRetryLoad: a model without an encoder is looked up again once
// RetryEvery has passed, and leaves approx mode when its tokenizer appears.
func TestRetryLoad(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	p, _ := New(map[string]Source{"late": {}})
	p.now = func() time.Time { return now }
	available := false
	looks := 0
	p.load = func(string, Source) (Encoder, error) {
		looks++
		if available {
			return simencoder.Encoder{}, nil
		}
		return nil, nil
	}
	p.tried["late"] = now
	r := parse(t, openai.Completion, `{"model":"late","prompt":"`+strings.Repeat("word ", 100)+`"}`)
	steps := []struct {
		advance   time.Duration
		available bool
		exact     bool
		looks     int
	}{
		{0, false, false, 0},
		{RetryEvery, false, false, 1},
		{time.Second, true, false, 1}, // too soon to look again
		{RetryEvery, true, true, 2},
		{RetryEvery, true, true, 2}, // found: no more looks
	}
	for i, st := range steps {
		now = now.Add(st.advance)
		available = st.available
		res, err := p.Compute(r, 16)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Keys != nil; got != st.exact || looks != st.looks {
			t.Errorf("step %d: exact keys %v after %d looks; want %v after %d", i, got, looks, st.exact, st.looks)
		}
	}
}

func TestHasMedia(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"messages":[{"role":"user","content":"hi"}]}`, false},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},"b"]}]}`, false},
		{`{"messages":[{"role":"user","content":[{"text":"a"}]}]}`, false},
		{`{"messages":[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]}`, false},
		{`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, true},
		{`{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, true},
		{`{"messages":[{"role":"user","content":[{"image_url":{"url":"x"}}]}]}`, true},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"a","video_url":{}}]}]}`, true},
		{`{"messages":[{"role":"user","content":[{"type":7}]}]}`, true},
		{`not json`, false},
	} {
		if got := hasMedia([]byte(tc.body)); got != tc.want {
			t.Errorf("hasMedia(%s) = %v; want %v", tc.body, got, tc.want)
		}
	}
}
