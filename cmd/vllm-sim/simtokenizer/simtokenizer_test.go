package simtokenizer

import (
	"slices"
	"testing"
	"unicode/utf8"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	tests := []string{
		"",
		"Hello, world!",
		"  two leading spaces and trailing  ",
		"naïve café — ünïcödé 東京 🙂👍🏽",
		"<|im_start|>user\nhi<|im_end|>\n",
		"a<b <s> </s>< |",
		"x = f(1234567) / 3.14159;",
	}
	var tok Tokenizer
	for _, s := range tests {
		ids := tok.Encode(s, false)
		got, err := tok.Decode(ids, false)
		if err != nil {
			t.Fatalf("Decode(Encode(%q)): %v", s, err)
		}
		if got != s {
			t.Errorf("round trip of %q gave %q", s, got)
		}
	}
}

func TestEncodeShape(t *testing.T) {
	var tok Tokenizer
	tests := []struct {
		in   string
		want []string // decoded pieces, one per token
	}{
		{"Hello world", []string{"Hel", "lo", " wo", "rld"}},
		{"a, b", []string{"a", ",", " b"}},
		{"<|im_start|>user", []string{"<|im_start|>", "use", "r"}},
		{"hi  there", []string{"hi", " ", " th", "ere"}},
	}
	for _, tt := range tests {
		var got []string
		for _, id := range tok.Encode(tt.in, false) {
			s, err := tok.Decode([]uint32{id}, false)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Encode(%q) pieces %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestBOSAndSkipSpecial(t *testing.T) {
	var tok Tokenizer
	ids := tok.Encode("hi</s>", true)
	if ids[0] != BOSID || ids[len(ids)-1] != EOSID {
		t.Fatalf("ids %v; want BOS first and EOS last", ids)
	}
	got, err := tok.Decode(ids, true)
	if err != nil || got != "hi" {
		t.Errorf("Decode skipping specials = %q, %v; want \"hi\"", got, err)
	}
}

func TestDecodeRejectsUnknownIDs(t *testing.T) {
	var tok Tokenizer
	for _, id := range []uint32{200, VocabSize, VocabSize + 7} {
		if _, err := tok.Decode([]uint32{id}, false); err == nil {
			t.Errorf("Decode(%d) succeeded; want an error", id)
		}
	}
}

// A prompt that extends another by whole pieces tokenizes to an extension of
// its ids: multi-turn chats share their prefix blocks.
func TestPrefixStability(t *testing.T) {
	var tok Tokenizer
	turn1 := RenderChat([]Message{{"system", "You are terse."}, {"user", "Hi"}}, true, false)
	turn2 := RenderChat([]Message{{"system", "You are terse."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}}, true, false)
	a, b := tok.Encode(turn1, false), tok.Encode(turn2, false)
	// turn1 ends with the generation prompt, which turn2 also contains.
	if !slices.Equal(a, b[:len(a)]) {
		t.Errorf("turn 2 does not extend turn 1's ids:\n%v\n%v", a, b[:len(a)])
	}
}

func FuzzRoundTrip(f *testing.F) {
	f.Add("Hello, world!")
	f.Add("<|im_end|>\xff\xfe")
	f.Fuzz(func(t *testing.T, s string) {
		var tok Tokenizer
		ids := tok.Encode(s, true)
		got, err := tok.Decode(ids[1:], false)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if got != s {
			t.Fatalf("round trip %q -> %q", s, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("valid input decoded to invalid UTF-8")
		}
	})
}
