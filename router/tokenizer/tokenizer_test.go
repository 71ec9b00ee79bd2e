package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Known ids published with the reference measurements (tokenizers.md).
func TestKnownIDs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model   string
		text    string
		special bool
		want    []uint32
	}{
		{"gpt2", "Hello, world!", false, []uint32{15496, 11, 995, 0}},
		{"llama3", "Hello, world!", false, []uint32{9906, 11, 1917, 0}},
		{"llama3_1", "Hello, world!", true, []uint32{128000, 9906, 11, 1917, 0}},
		{"qwen3", "Hello, world!", false, []uint32{9707, 11, 1879, 0}},
		{"llama2", "Hello", false, []uint32{22557}},
		{"llama2", "Hello", true, []uint32{1, 22557}},
		{"deepseek_v3", "", true, []uint32{0}}, // transformers' add_bos_token
	} {
		tok := loadModel(t, tc.model)
		if got := tok.Encode(tc.text, tc.special); !slices.Equal(got, tc.want) {
			t.Errorf("%s Encode(%q, %v) = %v; want %v", tc.model, tc.text, tc.special, got, tc.want)
		}
	}
}

func TestInvalidUTF8ReadsAsReplacement(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"llama3", "llama2"} {
		tok := loadModel(t, name)
		got := tok.Encode("a\xffb\xe2\x82", false)
		want := tok.Encode("a\uFFFDb\uFFFD\uFFFD", false)
		if !slices.Equal(got, want) {
			t.Errorf("%s: invalid UTF-8 encoded to %v; want %v (one U+FFFD per bad byte)", name, got, want)
		}
	}
}

func TestNewRejectsBadFiles(t *testing.T) {
	t.Parallel()
	const good = `{"added_tokens":[],"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}`
	for _, tc := range []struct {
		name, tokenizer, config, wantErr string
	}{
		{"not json", `{`, ``, "tokenizer.json"},
		{"bad config", good, `[`, "tokenizer_config.json"},
		{"unigram", `{"model":{"type":"Unigram","vocab":{"a":0}}}`, ``, `model type "Unigram"`},
		{"empty vocab", `{"model":{"type":"BPE","vocab":{}}}`, ``, "empty vocab"},
		{"merge not in vocab", `{"model":{"type":"BPE","vocab":{"a":0},"merges":["a c"]}}`, ``, `token "c" not in vocab`},
		{"merged not in vocab", `{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[["a","b"]]}}`, ``, `merged token "ab"`},
		{"bad merge", `{"model":{"type":"BPE","vocab":{"a":0},"merges":["ab"]}}`, ``, "two tokens"},
		{"bad merge pair", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[["a"]]}}`, ``, "pair of strings"},
		{"mixed merges", `{"model":{"type":"BPE","vocab":{"a":0},"merges":["a a",["a","a"]]}}`, ``, "merges: want"},
		{"sparse ids", `{"model":{"type":"BPE","vocab":{"a":4000000000}}}`, ``, "far beyond"},
		{"dropout", `{"model":{"type":"BPE","vocab":{"a":0},"dropout":0.1}}`, ``, "dropout"},
		{"unk missing", `{"model":{"type":"BPE","vocab":{"a":0},"unk_token":"<unk>"}}`, ``, "unk_token"},
		{"normalizer", `{"normalizer":{"type":"Precompiled"},"model":{"type":"BPE","vocab":{"a":0}}}`, ``, `normalizer type "Precompiled"`},
		{"pre", `{"pre_tokenizer":{"type":"Whitespace"},"model":{"type":"BPE","vocab":{"a":0}}}`, ``, `pre_tokenizer type "Whitespace"`},
		{"regex", `{"pre_tokenizer":{"type":"Split","pattern":{"Regex":"("},"behavior":"Isolated"},"model":{"type":"BPE","vocab":{"a":0}}}`, ``, "regex"},
		{"behavior", `{"pre_tokenizer":{"type":"Split","pattern":{"String":" "},"behavior":"Sideways"},"model":{"type":"BPE","vocab":{"a":0}}}`, ``, "Sideways"},
		{"post", `{"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>"}},{"Sequence":{"id":"A"}}],"special_tokens":{}},"model":{"type":"BPE","vocab":{"a":0}}}`, ``, `special token "<s>"`},
		{"decoder", `{"decoder":{"type":"CTC"},"model":{"type":"BPE","vocab":{"a":0}}}`, ``, `decoder type "CTC"`},
		{"bos missing", good, `{"tokenizer_class":"LlamaTokenizerFast"}`, "bos_token is not set"},
		{"bos unknown", good, `{"tokenizer_class":"LlamaTokenizerFast","bos_token":"<s>"}`, `bos_token "<s>" is not a token`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New([]byte(tc.tokenizer), []byte(tc.config))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New: error %v; want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestLoadMissingDir(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope"))
	if err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("Load(missing) = %v; want a not-exist error", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// A tiny SentencePiece-style model exercises byte fallback, <unk> fusing and
// the decoder chain without test data.
func TestSmallSPM(t *testing.T) {
	t.Parallel()
	tj := `{
	 "added_tokens":[{"id":0,"content":"<unk>","special":true},{"id":1,"content":"<s>","special":true}],
	 "normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]},
	 "post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>"}},{"Sequence":{"id":"A"}}],
	   "special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]}}},
	 "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
	 "model":{"type":"BPE","unk_token":"<unk>","fuse_unk":true,"byte_fallback":true,
	   "vocab":{"<unk>":0,"<s>":1,"<0xC3>":2,"<0xA9>":3,"▁":4,"a":5,"b":6,"▁a":7,"▁ab":8},
	   "merges":["▁ a","▁a b"]}}`
	tok, err := New([]byte(tj), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text    string
		special bool
		want    []uint32
		decoded string
	}{
		{"ab", false, []uint32{8}, "ab"},
		{"ab a", true, []uint32{1, 8, 7}, "ab a"},
		{"é", false, []uint32{4, 2, 3}, "é"},
		{"a<s>b", false, []uint32{7, 1, 4, 6}, "a<s> b"},
		{"axyb", false, []uint32{7, 0, 6}, "a<unk>b"}, // x and y fuse into one <unk>
	} {
		got := tok.Encode(tc.text, tc.special)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v; want %v", tc.text, got, tc.want)
		}
		if dec := tok.Decode(got, false); dec != tc.decoded && !tc.special {
			t.Errorf("Decode(%v) = %q; want %q", got, dec, tc.decoded)
		}
	}
}

func TestLossyUTF8(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"abc", "abc"},
		{"a\xffb", "a\uFFFDb"},
		{"\xe2\x82A", "\uFFFDA"},               // truncated 3-byte sequence: one U+FFFD
		{"\xe0\x80A", "\uFFFD\uFFFDA"},         // E0 80 is not a valid prefix
		{"\xf0\x9f\x98", "\uFFFD"},             // truncated emoji
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // surrogate
	} {
		if got := lossyUTF8([]byte(tc.in)); got != tc.want {
			t.Errorf("lossyUTF8(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestApplyBehavior(t *testing.T) {
	t.Parallel()
	// "a-b--c" split on "-": spans a | - | b | - | - | c
	in := func() []span {
		return stringMatcher("-").spans(nil, "a-b--c")
	}
	text := "a-b--c"
	for _, tc := range []struct {
		b    behavior
		want []string
	}{
		{removed, []string{"a", "b", "c"}},
		{isolated, []string{"a", "-", "b", "-", "-", "c"}},
		{mergedWithPrevious, []string{"a-", "b-", "-", "c"}},
		{mergedWithNext, []string{"a", "-b", "-", "-c"}},
		{contiguous, []string{"a", "-", "b", "--", "c"}},
	} {
		var got []string
		for _, s := range applyBehavior(in(), tc.b) {
			got = append(got, text[s.start:s.end])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("behavior %d: got %q; want %q", tc.b, got, tc.want)
		}
	}
}
