package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// apiKeys is vLLM's AuthenticationMiddleware: with keys configured, every
// request whose path starts with /v1 must carry "Authorization: Bearer
// <one of them>" (the scheme in any case), except OPTIONS; other paths
// (/health, /metrics, /tokenize, /version ...) stay open. Keys are held and
// compared as SHA-256 digests in constant time, as vLLM does.
type apiKeys [][32]byte

func newAPIKeys(keys []string) apiKeys {
	var out apiKeys
	for _, k := range keys {
		if k != "" {
			out = append(out, sha256.Sum256([]byte(k)))
		}
	}
	return out
}

// allows reports whether r may pass.
func (a apiKeys) allows(r *http.Request) bool {
	if len(a) == 0 || r.Method == http.MethodOptions || !strings.HasPrefix(r.URL.Path, "/v1") {
		return true
	}
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "bearer") {
		return false
	}
	got := sha256.Sum256([]byte(token))
	match := 0
	for _, k := range a {
		match |= subtle.ConstantTimeCompare(got[:], k[:])
	}
	return match == 1
}
