package scheduler

import (
	"strings"
	"testing"
)

func TestTextBlockKeys(t *testing.T) {
	a := strings.Repeat("system prompt. ", 40) // 600 bytes
	tests := []struct {
		name  string
		text  string
		chunk int
		want  int
	}{
		{"empty", "", 0, 0},
		{"shorter than a chunk", "hello", 0, 0},
		{"full chunks only", a, 0, 600 / TextChunkBytes},
		{"custom chunk", a, 100, 6},
	}
	for _, tc := range tests {
		if got := TextBlockKeys(nil, tc.text, tc.chunk); len(got) != tc.want {
			t.Errorf("%s: %d keys; want %d", tc.name, len(got), tc.want)
		}
	}
	// Shared prefixes share keys; a difference changes every later key.
	k1 := TextBlockKeys(nil, a+"user: what is 2+2?"+strings.Repeat(".", 200), 0)
	k2 := TextBlockKeys(nil, a+"user: what is 3+3?"+strings.Repeat(".", 200), 0)
	shared := 0
	for shared < min(len(k1), len(k2)) && k1[shared] == k2[shared] {
		shared++
	}
	if shared != 600/TextChunkBytes {
		t.Errorf("%d shared keys; want the %d full chunks of the common prefix", shared, 600/TextChunkBytes)
	}
	// Chaining: the same chunk after different prefixes gets different keys.
	x := TextBlockKeys(nil, strings.Repeat("a", 128)+strings.Repeat("c", 128), 0)
	y := TextBlockKeys(nil, strings.Repeat("b", 128)+strings.Repeat("c", 128), 0)
	if x[1] == y[1] {
		t.Error("equal chunk after different prefixes got the same key")
	}
}

func FuzzTextBlockKeys(f *testing.F) {
	f.Add("hello world", 3)
	f.Fuzz(func(t *testing.T, text string, chunk int) {
		if chunk > 1<<20 || chunk < -1<<20 {
			return
		}
		ks := TextBlockKeys(nil, text, chunk)
		c := chunk
		if c <= 0 {
			c = TextChunkBytes
		}
		if len(ks) != len(text)/c {
			t.Fatalf("%d keys for %d bytes in chunks of %d", len(ks), len(text), c)
		}
	})
}
