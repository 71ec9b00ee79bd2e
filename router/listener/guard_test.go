package listener

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRequireBearer(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	tests := []struct {
		name, token, auth string
		code              int
	}{
		{"no token configured", "", "", http.StatusTeapot},
		{"right token", "s3cret", "Bearer s3cret", http.StatusTeapot},
		{"missing", "s3cret", "", http.StatusUnauthorized},
		{"wrong", "s3cret", "Bearer s3cre", http.StatusUnauthorized},
		{"longer", "s3cret", "Bearer s3cretx", http.StatusUnauthorized},
		{"no scheme", "s3cret", "s3cret", http.StatusUnauthorized},
		{"basic", "s3cret", "Basic czNjcmV0", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "/admin/replicas", nil)
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			RequireBearer(tt.token, ok).ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("%d; want %d", rec.Code, tt.code)
			}
			if tt.code == http.StatusUnauthorized && (rec.Header().Get("WWW-Authenticate") == "" || !strings.Contains(rec.Body.String(), `"error"`)) {
				t.Errorf("401 without WWW-Authenticate or an OpenAI-shaped body: %v %s", rec.Header(), rec.Body)
			}
		})
	}
}

func TestGuardHeaderCount(t *testing.T) {
	t.Parallel()
	h := Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), Limits{MaxHeaders: 5})
	for _, n := range []int{5, 6, 500} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		for i := range n {
			req.Header.Add("X-Same", fmt.Sprint(i)) // repeated fields count one by one
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		want := http.StatusOK
		if n > 5 {
			want = http.StatusRequestHeaderFieldsTooLarge
		}
		if rec.Code != want || (want != 200 && !strings.Contains(rec.Body.String(), "at most 5")) {
			t.Errorf("%d fields: %d %s; want %d", n, rec.Code, rec.Body, want)
		}
	}
}
