package tokenizer

import (
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzEncode checks, on arbitrary input (invalid UTF-8 included), that
// encoding never panics, that byte-level decoding round-trips, and that the
// prefix cache agrees with a fresh encode.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "Hello, world!", "<|im_start|>user\nhi<|im_end|>", "a\xffb", "  \n\t\u3000x", "日本語🏳️‍🌈", "<s>[INST] x [/INST]"} {
		f.Add(s)
	}
	llama := loadModel(f, "llama3_1")
	qwen := loadModel(f, "qwen3")
	mistral := loadModel(f, "llama2")
	cache := NewPrefixCache(qwen, 4)
	f.Fuzz(func(t *testing.T, s string) {
		ids := llama.Encode(s, true)
		if got, want := llama.Decode(ids, true), validUTF8(s); got != want {
			t.Errorf("llama3_1 round trip of %q gave %q", s, got)
		}
		for _, id := range ids {
			if _, ok := llama.Token(id); !ok {
				t.Fatalf("llama3_1 produced unknown id %d for %q", id, s)
			}
		}
		q := qwen.Encode(s, false)
		if c := cache.Encode(s, false); !slices.Equal(c, q) {
			t.Errorf("prefix cache gave %v; encode %v for %q", c, q, s)
		}
		if d := qwen.Decode(q, false); !utf8.ValidString(d) {
			t.Errorf("qwen3 decode is not valid UTF-8: %q", d)
		}
		m := mistral.Encode(s, false)
		if d := mistral.Decode(m, false); !utf8.ValidString(d) {
			t.Errorf("llama2 decode is not valid UTF-8: %q", d)
		}
	})
}

// FuzzNew feeds arbitrary tokenizer.json and tokenizer_config.json bytes to
// the loader: it must return an error or a usable tokenizer, never panic.
func FuzzNew(f *testing.F) {
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}`), []byte(`{}`))
	f.Add([]byte(`{"added_tokens":[{"id":3,"content":"<s>","special":true}],"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"_"}]},`+
		`"pre_tokenizer":{"type":"Metaspace","replacement":"_","prepend_scheme":"first"},"decoder":{"type":"Metaspace"},`+
		`"model":{"type":"BPE","byte_fallback":true,"vocab":{"_":0,"a":1,"_a":2},"merges":[["_","a"]]}}`), []byte(`{"tokenizer_class":"LlamaTokenizerFast","bos_token":"<s>"}`))
	f.Add([]byte(`{"pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"MergedWithNext","invert":true},"model":{"vocab":{"a":0}}}`), []byte(nil))
	f.Fuzz(func(t *testing.T, tj, cj []byte) {
		tok, err := New(tj, cj)
		if err != nil {
			return
		}
		for _, s := range []string{"", "a b", "ab\xff", "<s>a"} {
			tok.Decode(tok.Encode(s, true), false)
		}
	})
}
