package server

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// maxCacheSalt is vLLM's limit on a cache_salt, in characters.
const maxCacheSalt = 128

// cacheSalt reads a request's cache_salt and checks it as vLLM's
// validate_cache_salt does for chat and completions: absent or null is no
// salt; anything else must be a non-empty string of at most 128 characters
// without '@', '/', '\' or NUL. The messages are vLLM's.
func cacheSalt(raw json.RawMessage) (string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var salt string
	if err := json.Unmarshal(raw, &salt); err != nil || salt == "" {
		return "", badRequest("Parameter 'cache_salt' must be a non-empty string if provided.")
	}
	if utf8.RuneCountInString(salt) > maxCacheSalt || strings.ContainsAny(salt, "@/\\\x00") {
		return "", badRequest("Parameter 'cache_salt' must be at most 128 characters and must not contain '@', '/', '\\\\', or NUL.")
	}
	return salt, nil
}
