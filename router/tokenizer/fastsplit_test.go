package tokenizer

import (
	"slices"
	"sync"
	"testing"

	"github.com/dlclark/regexp2"
)

var compiledFast = sync.OnceValue(func() map[string]*regexp2.Regexp {
	out := map[string]*regexp2.Regexp{}
	for pattern := range fastPatterns {
		out[pattern] = regexp2.MustCompile(pattern, regexp2.None)
	}
	return out
})

// The hand-written matchers must find exactly the spans regexp2 finds.
func checkFastSplit(t *testing.T, text string) {
	t.Helper()
	for pattern, fast := range fastPatterns {
		want := regexMatcher{compiledFast()[pattern]}.spans(nil, text)
		got := fastMatcher{fast}.spans(nil, text)
		if !slices.Equal(got, want) {
			t.Fatalf("pattern %.40q… on %q:\n got %v\nwant %v", pattern, text, got, want)
		}
	}
}

func TestFastSplitMatchesRegexp2(t *testing.T) {
	t.Parallel()
	extra := []string{"ǅungla Ǆ", "ʰʰa", "ÀB́c", "x'S'ReLL", "a\u0301\u0301b", "\u0301x", "1\u0301", "ABCdef'LL", "ǅǅ", "ˆˆ", "a//\n/", " \u3000\n x"}
	for _, s := range extra {
		checkFastSplit(t, s)
	}
	for _, name := range models {
		for _, c := range readGolden(t, name).Cases {
			checkFastSplit(t, c.Text)
		}
	}
}

func FuzzFastSplit(f *testing.F) {
	for _, s := range []string{"Hello, world!", "ǅungla'S", "  \n\n x", "123456", "a\u0301b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkFastSplit(t, validUTF8(s))
	})
}
