package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/router/config"
)

const chat = `{"model":"m","messages":[{"role":"user","content":"hello"}]}`

// startWith starts a router over one static replica (backend) with the
// config edited; it closes with the test.
func startWith(t *testing.T, backend string, edit func(*config.Config)) *Server {
	t.Helper()
	c := testConfig()
	c.Replicas[0].Address = backend
	if edit != nil {
		edit(&c)
	}
	s, err := Start(context.Background(), c, hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func do(t *testing.T, method, url, auth, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
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

// TestAdminPortSplit: the API port serves the OpenAI API, /health and
// /ready and answers 404 to every admin path; the admin port serves them,
// behind admin_token when one is set.
func TestAdminPortSplit(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) }))
	defer backend.Close()
	for _, token := range []string{"", "admin-secret"} {
		t.Run(fmt.Sprintf("token=%q", token), func(t *testing.T) {
			s := startWith(t, backend.Listener.Addr().String(), func(c *config.Config) { c.HTTP.AdminToken = token })
			api, admin := "http://"+s.Addr(), "http://"+s.AdminAddr()
			for _, p := range []struct{ method, path string }{
				{"GET", "/metrics"}, {"GET", "/admin/replicas"}, {"GET", StatusPath}, {"POST", "/admin/explain/chat"}, {"POST", "/admin/explain/completions"},
			} {
				if c, b := do(t, p.method, api+p.path, "", chat); c != http.StatusNotFound {
					t.Errorf("API port %s %s: %d %s; want 404", p.method, p.path, c, b)
				}
			}
			for _, p := range []string{"/health", "/ready", "/v1/models"} {
				if c, b := do(t, "GET", api+p, "", ""); c != 200 {
					t.Errorf("API port %s: %d %s", p, c, b)
				}
			}
			auth := ""
			if token != "" {
				auth = "Bearer " + token
				for _, bad := range []string{"", "Bearer wrong", "Bearer " + token + "x", token} {
					for _, p := range []string{"/admin/replicas", StatusPath} {
						if c, b := do(t, "GET", admin+p, bad, ""); c != http.StatusUnauthorized || !strings.Contains(b, "admin_token") {
							t.Errorf("admin %s with %q: %d %s; want 401 naming admin_token", p, bad, c, b)
						}
					}
				}
			}
			if c, b := do(t, "GET", admin+"/admin/replicas", auth, ""); c != 200 || !strings.Contains(b, `"id":"a/1"`) {
				t.Errorf("admin /admin/replicas: %d %s", c, b)
			}
			if c, b := do(t, "GET", admin+StatusPath, auth, ""); c != 200 || !strings.Contains(b, `data-replica="a/1"`) {
				t.Errorf("admin %s: %d %s", StatusPath, c, b)
			}
			if c, b := do(t, "GET", admin+"/metrics", auth, ""); c != 200 || !strings.Contains(b, "llmgw_replica_info") {
				t.Errorf("admin /metrics: %d", c)
			}
			if c, b := do(t, "POST", admin+"/admin/explain/chat", auth, chat); c != 200 || !strings.Contains(b, `"chosen"`) {
				t.Errorf("admin explain: %d %s", c, b)
			}
			if c, _ := do(t, "POST", admin+"/v1/chat/completions", auth, chat); c != http.StatusNotFound {
				t.Errorf("admin port routes completions: %d; want 404", c)
			}
		})
	}
}

// TestRouteHeadersOffByDefault: a routed answer through a default router
// names no replica and no cached tokens; expose_route_headers turns them on.
func TestRouteHeadersOffByDefault(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) }))
	defer backend.Close()
	for _, expose := range []bool{false, true} {
		s := startWith(t, backend.Listener.Addr().String(), func(c *config.Config) { c.HTTP.ExposeRouteHeaders = expose })
		resp, err := http.Post("http://"+s.Addr()+"/v1/chat/completions", "application/json", strings.NewReader(chat))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Llmgw-Cached-Tokens") != "" && resp.Header.Get("X-Llmgw-Replica") == "a/1"; got != expose {
			t.Errorf("expose_route_headers=%t: route headers sent=%t (%v)", expose, got, resp.Header)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
