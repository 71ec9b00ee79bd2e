package server

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCacheSalt feeds cache_salt any JSON: it never panics, and what it
// accepts is what vLLM accepts, a non-empty string within the limits or no
// salt at all for null.
func FuzzCacheSalt(f *testing.F) {
	for _, s := range []string{`"tenant-a"`, `null`, `""`, `42`, `"a/b"`, `"` + strings.Repeat("é", 129) + `"`, `{"x":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		salt, err := cacheSalt(json.RawMessage(raw))
		if err != nil {
			if salt != "" || err.status != 400 {
				t.Fatalf("refused %q with salt %q and status %d", raw, salt, err.status)
			}
			return
		}
		if salt == "" {
			if raw != "" && raw != "null" {
				t.Fatalf("%q accepted as no salt", raw)
			}
			return
		}
		if utf8.RuneCountInString(salt) > maxCacheSalt || strings.ContainsAny(salt, "@/\\\x00") {
			t.Fatalf("%q accepted as salt %q", raw, salt)
		}
	})
}
