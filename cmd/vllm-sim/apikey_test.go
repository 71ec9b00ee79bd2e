package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// status sends method path with an optional Authorization header and
// returns the status and body.
func status(t *testing.T, p proc, method, path, auth string) (int, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"prompt":"x","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`)
	}
	req, err := http.NewRequest(method, p.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAPIKey follows vLLM's AuthenticationMiddleware: every /v1 path needs
// one of the keys as a bearer token (scheme in any case), other paths and
// OPTIONS stay open, and the refusal is {"error": "Unauthorized"}. Keys
// come from --api-key (several allowed) or, without it, VLLM_API_KEY.
func TestAPIKey(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		args []string
		keys []string // each must be accepted
	}{
		{"flag", nil, []string{"--api-key", "sekret"}, []string{"sekret"}},
		{"two keys in one flag", nil, []string{"--api-key", "k1", "k2"}, []string{"k1", "k2"}},
		{"environment", []string{"VLLM_API_KEY=from-env"}, nil, []string{"from-env"}},
		{"the flag wins over the environment", []string{"VLLM_API_KEY=from-env"}, []string{"--api-key", "sekret"}, []string{"sekret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startSim(t, tt.env, tt.args...)
			for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/v1/models", "/v1/no-such-route"} {
				method := http.MethodPost
				if path == "/v1/models" || path == "/v1/no-such-route" {
					method = http.MethodGet
				}
				for _, bad := range []string{"", "Bearer wrong", "Basic " + tt.keys[0], tt.keys[0]} {
					st, body := status(t, p, method, path, bad)
					var e struct{ Error string }
					if st != 401 || json.Unmarshal([]byte(body), &e) != nil || e.Error != "Unauthorized" {
						t.Errorf("%s %s with %q: %d %s; want 401 {\"error\": \"Unauthorized\"}", method, path, bad, st, body)
					}
				}
				if path == "/v1/no-such-route" {
					if st, _ := status(t, p, method, path, "Bearer "+tt.keys[0]); st != 404 {
						t.Errorf("%s with the key: %d; want 404 past the key check", path, st)
					}
					continue
				}
				for _, k := range tt.keys {
					for _, auth := range []string{"Bearer " + k, "bearer " + k} {
						if st, body := status(t, p, method, path, auth); st != 200 {
							t.Errorf("%s %s with %q: %d %s; want 200", method, path, auth, st, body)
						}
					}
				}
			}
			for _, open := range []struct{ method, path string }{
				{http.MethodGet, "/health"}, {http.MethodGet, "/metrics"}, {http.MethodGet, "/version"},
				{http.MethodPost, "/tokenize"}, {http.MethodOptions, "/v1/models"},
			} {
				if st, _ := status(t, p, open.method, open.path, ""); st == 401 {
					t.Errorf("%s %s without a key: 401; vLLM leaves it open", open.method, open.path)
				}
			}
		})
	}
	t.Run("an empty VLLM_API_KEY leaves the server open", func(t *testing.T) {
		p := startSim(t, []string{"VLLM_API_KEY="})
		if st, body := status(t, p, http.MethodGet, "/v1/models", ""); st != 200 {
			t.Errorf("/v1/models: %d %s; want 200", st, body)
		}
	})
}
