package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/scheduler"
)

// TestRouteHeadersOptIn: without ExposeRouteHeaders a routed answer
// carries no X-Llmgw-* header (no way to probe the cache through them);
// with it, all four.
func TestRouteHeadersOptIn(t *testing.T) {
	ok := backend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	all := []string{HeaderReplica, HeaderMode, HeaderCachedTokens, HeaderAttempts}
	for _, expose := range []bool{false, true} {
		h := newHarnessWith(t, func(d *testDeps, _ *scheduler.Config) { d.Options.ExposeRouteHeaders = expose }, ok)
		for range 2 { // the second request hits what the first left cached
			resp, b := post(t, h.srv.URL+"/v1/chat/completions", chatBody)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("expose=%t: status %d: %s", expose, resp.StatusCode, b)
			}
			for _, name := range all {
				if got := resp.Header.Get(name) != ""; got != expose {
					t.Errorf("expose=%t: header %s present=%t (%q)", expose, name, got, resp.Header.Get(name))
				}
			}
			for name := range resp.Header {
				if strings.HasPrefix(strings.ToLower(name), "x-llmgw") && !expose {
					t.Errorf("expose=false: header %s sent", name)
				}
			}
		}
	}
}

// TestSessionIDCap: a session id over MaxSessionIDBytes is refused with 400
// naming the header and the cap, on the API and the explain API; one at the
// cap is routed.
func TestSessionIDCap(t *testing.T) {
	ok := backend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	h := newHarness(t, 1<<20, ok)
	send := func(base, path, id string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(chatBody))
		req.Header.Set("X-Session-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	tests := []struct {
		name, base, path string
		len, code        int
	}{
		{"at the cap", h.srv.URL, "/v1/chat/completions", MaxSessionIDBytes, 200},
		{"over the cap", h.srv.URL, "/v1/chat/completions", MaxSessionIDBytes + 1, 400},
		{"huge", h.srv.URL, "/v1/chat/completions", 32 << 10, 400},
		{"explain over the cap", h.admin.URL, "/admin/explain/chat", MaxSessionIDBytes + 1, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, b := send(tt.base, tt.path, strings.Repeat("s", tt.len))
			if code != tt.code {
				t.Fatalf("status %d; want %d: %s", code, tt.code, b)
			}
			if code == 400 {
				if e := openAIError(t, b); !strings.Contains(e.Message, "X-Session-Id") || !strings.Contains(e.Message, "at most 128") {
					t.Errorf("message %q; want it to name the header and the cap", e.Message)
				}
			}
		})
	}
}
