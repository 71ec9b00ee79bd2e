package attack

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// adminWithoutCredentials: the API port has no admin paths at all; the
// admin port answers 401 without the token.
func adminWithoutCredentials(t *testing.T, r *router) {
	for _, p := range []struct{ method, path string }{{"GET", "/admin/replicas"}, {"GET", "/metrics"}, {"POST", "/admin/explain/completions"}} {
		if c := status(t, p.method, "http://"+r.API+p.path, nil, `{"model":"sim-model","prompt":"x"}`); c != 404 {
			t.Errorf("API port %s %s: %d; want 404", p.method, p.path, c)
		}
		for _, auth := range []string{"", "Bearer wrong", "Basic YWRtaW46YWRtaW4="} {
			h := http.Header{}
			if auth != "" {
				h.Set("Authorization", auth)
			}
			if c := status(t, p.method, "http://"+r.Admin+p.path, h, `{"model":"sim-model","prompt":"x"}`); c != 401 {
				t.Errorf("admin port %s %s with %q: %d; want 401", p.method, p.path, auth, c)
			}
		}
	}
	if c := status(t, "GET", "http://"+r.Admin+"/admin/replicas", http.Header{"Authorization": {"Bearer " + adminToken}}, ""); c != 200 {
		t.Errorf("admin with the token: %d", c)
	}
	t.Logf("BOUND admin without credentials: API port 404 on /admin/*, /metrics; admin port 401 without the token")
}

// cacheProbing: the same prompt twice (the second a cache hit) carries no
// header that says so.
func cacheProbing(t *testing.T, r *router) {
	body := `{"model":"sim-model","prompt":"` + strings.Repeat("the secret prefix of another tenant ", 8) + `","max_tokens":1}`
	for i := range 2 {
		resp, err := noKeepAlive.Post("http://"+r.API+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
		for name := range resp.Header {
			if strings.HasPrefix(strings.ToLower(name), "x-llmgw") {
				t.Errorf("request %d carries %s: %q", i, name, resp.Header.Get(name))
			}
		}
	}
	t.Logf("BOUND cache probing through headers: no X-Llmgw-* header on a miss or a hit")
}

// readyWithoutKey: the readiness probe needs no key, so it names no model
// (which models exist is for /v1/models to show a key).
func readyWithoutKey(t *testing.T, r *router) {
	resp, err := noKeepAlive.Get("http://" + r.API + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(b), model) || strings.Contains(string(b), "models") {
		t.Errorf("/ready without a key: %d %s; want 200 naming no model", resp.StatusCode, b)
	}
	t.Logf("BOUND /ready without a key: 200 %s, no model named", strings.TrimSpace(string(b)))
}
