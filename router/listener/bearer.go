package listener

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"

	"github.com/llmgw/llmgw/router/openai"
)

// RequireBearer answers 401 to a request to h that does not carry
// "Authorization: Bearer <token>"; an empty token lets every request
// through. The comparison takes the same time whatever the guess: both
// sides are hashed to a fixed length first.
func RequireBearer(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte("Bearer " + token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="llmgw-admin"`)
			openai.WriteError(w, http.StatusUnauthorized, "the admin API needs Authorization: Bearer <admin_token>")
			return
		}
		h.ServeHTTP(w, r)
	})
}
