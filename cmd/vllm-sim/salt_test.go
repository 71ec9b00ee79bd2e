package main

import (
	"strings"
	"testing"
)

// cachedWith sends one request of the given kind with body fields merged
// in and returns usage.prompt_tokens_details.cached_tokens.
func cachedWith(t *testing.T, p proc, path string, fields map[string]any) int {
	t.Helper()
	body := map[string]any{"model": "sim-model", "max_tokens": 2}
	for k, v := range fields {
		body[k] = v
	}
	var c completion
	if st := post(t, p.URL+path, body, &c); st != 200 {
		t.Fatalf("%s: status %d: %+v", path, st, c.Error)
	}
	return c.Usage.PromptTokensDetails.CachedTokens
}

// TestCacheSaltIsolatesOverHTTP sends one long prompt under different
// cache_salt values, for chat and completions, and reads the reported
// cached tokens: a salt shares the prefix cache only with itself, and never
// with unsalted requests, as vLLM's salt on block 0 makes it.
func TestCacheSaltIsolatesOverHTTP(t *testing.T) {
	p := startSim(t, nil, "--block-size", "16", "--enable-prompt-tokens-details")
	for _, kind := range []struct {
		path   string
		prompt func(salt any) map[string]any
	}{
		{"/v1/completions", func(salt any) map[string]any {
			return map[string]any{"prompt": words(0, 200), "cache_salt": salt}
		}},
		{"/v1/chat/completions", func(salt any) map[string]any {
			return map[string]any{"messages": []map[string]string{{"role": "user", "content": words(300, 200)}}, "cache_salt": salt}
		}},
	} {
		t.Run(strings.TrimPrefix(kind.path, "/v1/"), func(t *testing.T) {
			steps := []struct {
				salt   any // nil sends null: no salt
				cached bool
			}{
				{"tenant-a", false},
				{"tenant-b", false}, // another salt, same prompt
				{nil, false},        // unsalted
				{"tenant-a", true},  // the first salt again
				{"tenant-b", true},
				{nil, true},
			}
			for i, st := range steps {
				got := cachedWith(t, p, kind.path, kind.prompt(st.salt))
				if st.cached != (got > 0) {
					t.Errorf("request %d (salt %v): %d cached tokens; want cached=%v", i, st.salt, got, st.cached)
				}
			}
		})
	}
}

// TestCacheSaltValidation refuses what vLLM's validate_cache_salt refuses,
// with its messages, and accepts what it accepts.
func TestCacheSaltValidation(t *testing.T) {
	p := startSim(t, nil)
	tests := []struct {
		salt any
		want string // "" when accepted
	}{
		{"", "must be a non-empty string"},
		{42, "must be a non-empty string"},
		{strings.Repeat("s", 129), "at most 128 characters"},
		{"a/b", "must not contain '@', '/'"},
		{"a@b", "must not contain '@', '/'"},
		{`a\b`, "must not contain '@', '/'"},
		{"a\x00b", "must not contain '@', '/'"},
		{strings.Repeat("é", 128), ""}, // characters, not bytes
		{"tenant-a", ""},
		{nil, ""},
	}
	for _, tt := range tests {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			body := map[string]any{"model": "sim-model", "max_tokens": 1, "cache_salt": tt.salt,
				"prompt": "hi", "messages": []map[string]string{{"role": "user", "content": "hi"}}}
			if path == "/v1/completions" {
				delete(body, "messages")
			} else {
				delete(body, "prompt")
			}
			var c completion
			st := post(t, p.URL+path, body, &c)
			switch {
			case tt.want == "" && st != 200:
				t.Errorf("%s salt %q: status %d (%+v); want 200", path, tt.salt, st, c.Error)
			case tt.want != "" && (st != 400 || c.Error == nil || !strings.Contains(c.Error.Message, tt.want)):
				t.Errorf("%s salt %q: status %d (%+v); want 400 mentioning %q", path, tt.salt, st, c.Error, tt.want)
			}
		}
	}
}
