package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/auth"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/ratelimit"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/tenant"
)

const (
	listKey     = "llmgw-list-key-0123456789abcdef"
	openKey     = "llmgw-open-key-0123456789abcdef"
	onlyOKey    = "llmgw-only-o-key-0123456789abcd"
	limitedKey  = "llmgw-limited-key-0123456789abc"
	tokensKey   = "llmgw-tokens-key-0123456789abcd"
	isolatedKey = "llmgw-isolated-key-0123456789ab"
	saltSecret  = "0123456789abcdef0123456789abcdef"
)

// keysFile writes a keys file with one tenant per test key.
func keysFile(t *testing.T) string {
	t.Helper()
	ten := func(name, key, extra string) string {
		return fmt.Sprintf(`{"name": %q, "keys_sha256": [%q]%s}`, name, auth.HashKey(key).String(), extra)
	}
	src := `{"salt_secret": "` + saltSecret + `", "tenants": [` + strings.Join([]string{
		ten("open", openKey, ""),
		ten("only-o", onlyOKey, `, "models": ["o"]`),
		ten("limited", limitedKey, `, "limits": {"requests_per_second": 0.01, "max_concurrent": 1}`),
		ten("tokens", tokensKey, `, "limits": {"tokens_per_minute": 1000}`),
		ten("isolated", isolatedKey, `, "isolated": true`),
	}, ",") + `]}`
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// seen is what the backend got.
type seen struct {
	mu    sync.Mutex
	auth  []string
	salts []string
}

func (s *seen) last() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth[len(s.auth)-1], s.salts[len(s.salts)-1]
}

// authHarness runs a gateway with keys from the list and a file, and
// rate limits, over a backend that records what reached it and answers
// with usage.total_tokens = usage (an atomic in the test).
func authHarness(t *testing.T, usage string, release chan struct{}) (*harness, *seen) {
	t.Helper()
	store, err := auth.Open(auth.Options{Keys: []string{listKey}, File: keysFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	s := &seen{}
	b := backend(t, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			CacheSalt string `json:"cache_salt"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		s.mu.Lock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.salts = append(s.salts, body.CacheSalt)
		s.mu.Unlock()
		if release != nil && strings.Contains(string(raw), "block") {
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","choices":[{"message":{"content":"\"usage\": {\"total_tokens\": 999}"}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":%s}}`, usage)
	})
	h := newHarnessWith(t, func(d *testDeps, _ *scheduler.Config) {
		d.Auth, d.Route.Limits = store, ratelimit.New()
	}, b)
	return h, s
}

func call(t *testing.T, url, key, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestAuth(t *testing.T) {
	h, s := authHarness(t, "5", nil)
	chat := h.srv.URL + "/v1/chat/completions"
	for _, tc := range []struct {
		name, auth string
		code       int
		oaCode     string
	}{
		{"no header", "", 401, openai.CodeInvalidAPIKey},
		{"not bearer", "Basic " + openKey, 401, openai.CodeInvalidAPIKey},
		{"empty bearer", "Bearer ", 401, openai.CodeInvalidAPIKey},
		{"unknown key", "Bearer llmgw-not-a-key-0123456789abcd", 401, openai.CodeInvalidAPIKey},
		{"hash as key", "Bearer " + auth.HashKey(openKey).String(), 401, openai.CodeInvalidAPIKey},
		{"list key", "Bearer " + listKey, 200, ""},
		{"file key", "Bearer " + openKey, 200, ""},
		{"scheme in lower case", "bearer " + openKey, 200, ""},
		{"model not allowed", "Bearer " + onlyOKey, 404, openai.CodeModelNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := call(t, chat, tc.auth, chatBody)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, b)
			}
			if tc.code == 200 {
				if a, _ := s.last(); a != "" {
					t.Errorf("the engine got the client's Authorization header %q", a)
				}
				return
			}
			var e struct{ Error openai.Error }
			if err := json.Unmarshal(b, &e); err != nil || e.Error.Code != tc.oaCode || e.Error.Type != openai.TypeInvalidRequest || e.Error.Message == "" {
				t.Errorf("error body %s; want type %s, code %s", b, openai.TypeInvalidRequest, tc.oaCode)
			}
			if strings.Contains(string(b), "llmgw-") {
				t.Errorf("the error repeats the key: %s", b)
			}
			if tc.code == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	// /health and /ready need no key; /v1/models does, and lists only the
	// tenant's models.
	for path, want := range map[string]int{"/health": 200, "/ready": 200, "/v1/models": 401} {
		if resp, err := http.Get(h.srv.URL + path); err != nil || resp.StatusCode != want {
			t.Errorf("GET %s without a key: %v %v, want %d", path, resp.StatusCode, err, want)
		} else {
			resp.Body.Close()
		}
	}
	models := func(key string) string {
		req, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if all, only := models(openKey), models(onlyOKey); !strings.Contains(all, `"id":"m"`) || strings.Contains(only, `"id":"m"`) {
		t.Errorf("/v1/models: open tenant %s; tenant limited to o %s", all, only)
	}
}

func TestRateLimits(t *testing.T) {
	release := make(chan struct{})
	h, _ := authHarness(t, "5", release)
	chat := h.srv.URL + "/v1/chat/completions"
	// An admitted request carries the headers.
	resp, b := call(t, chat, "Bearer "+limitedKey, chatBody)
	if resp.StatusCode != 200 || resp.Header.Get(ratelimit.HeaderLimitRequests) != "1" || resp.Header.Get(ratelimit.HeaderRemainingRequests) != "0" ||
		resp.Header.Get(ratelimit.HeaderResetRequests) == "" {
		t.Fatalf("admitted: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	// The next, within the second, is refused as OpenAI refuses.
	resp, b = call(t, chat, "Bearer "+limitedKey, chatBody)
	if resp.StatusCode != 429 {
		t.Fatalf("over the limit: %d %s", resp.StatusCode, b)
	}
	var e struct{ Error openai.Error }
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Code != openai.CodeRateLimitExceeded || e.Error.Type != openai.TypeRequests {
		t.Errorf("429 body %s", b)
	}
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 100 {
		t.Errorf("Retry-After %q; want 1 to 100 seconds", resp.Header.Get("Retry-After"))
	}
	if d, err := ratelimit.ParseReset(resp.Header.Get(ratelimit.HeaderResetRequests)); err != nil || d <= 0 {
		t.Errorf("reset header %q: %v", resp.Header.Get(ratelimit.HeaderResetRequests), err)
	}
	// Other tenants are not held back.
	if resp, b := call(t, chat, "Bearer "+openKey, chatBody); resp.StatusCode != 200 || resp.Header.Get(ratelimit.HeaderLimitRequests) != "" {
		t.Errorf("unlimited tenant: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	close(release)
}

func TestConcurrencyLimit(t *testing.T) {
	release := make(chan struct{})
	h, s := authHarness(t, "5", release)
	chat := h.srv.URL + "/v1/chat/completions"
	limits := h.limits
	done := make(chan int)
	go func() {
		resp, _ := call(t, chat, "Bearer "+limitedKey, `{"model":"m","messages":[{"role":"user","content":"block"}]}`)
		done <- resp.StatusCode
	}()
	// The blocked request is in flight once the backend holds it.
	poll.Until(t, "the backend to hold the request", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.auth) == 1
	})
	ten := &tenant.Tenant{Name: "limited", Limits: tenant.Limits{MaxConcurrent: 1}}
	if _, st := limits.Admit(ten, 0, false); st.Allowed || st.Limit != ratelimit.LimitConcurrent {
		t.Errorf("second concurrent request admitted: %+v", st)
	}
	close(release)
	if code := <-done; code != 200 {
		t.Errorf("the held request ended with %d", code)
	}
	// The handler finishes the grant just after the client has the body.
	poll.Until(t, "the ended request to leave the tenant's count", func() bool { return limits.Own()["limited"].InFlight == 0 })
	if u := limits.Own()["limited"]; u.Requests != 1 || u.Tokens != 5 {
		t.Errorf("after it ended: %+v; want one request of 5 tokens", u)
	}
}

func TestTokensCorrectedFromUsage(t *testing.T) {
	h, _ := authHarness(t, "5", nil)
	chat := h.srv.URL + "/v1/chat/completions"
	// Each request is estimated at its prompt plus 400 and uses 5: without
	// the correction the third would be over the 1000 a minute.
	body := `{"model":"m","max_tokens":400,"messages":[{"role":"user","content":"hello there"}]}`
	for i := range 5 {
		resp, b := call(t, chat, "Bearer "+tokensKey, body)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
	}
	poll.Until(t, "every request's usage to be charged", func() bool {
		u := h.limits.Own()["tokens"]
		return u.Tokens == 25 && u.Requests == 5 && u.InFlight == 0
	})
	resp, b := call(t, chat, "Bearer "+tokensKey, `{"model":"m","max_tokens":5000,"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "" || !strings.Contains(string(b), "Request too large") {
		t.Errorf("a request over a minute's budget: %d %v %s", resp.StatusCode, resp.Header, b)
	}
}

func TestIsolatedTenantIsSalted(t *testing.T) {
	h, s := authHarness(t, "5", nil)
	chat := h.srv.URL + "/v1/chat/completions"
	salt := auth.CacheSalt(saltSecret, "isolated")
	for _, tc := range []struct{ key, body, want string }{
		{openKey, chatBody, ""},
		{openKey, `{"model":"m","cache_salt":"mine","messages":[{"role":"user","content":"hi"}]}`, "mine"},
		{isolatedKey, chatBody, salt},
		{isolatedKey, `{"model":"m","cache_salt":"mine","messages":[{"role":"user","content":"hi"}]}`, hmacHex(salt, "mine")},
		{isolatedKey, `{"model":"m","cache_salt":"","messages":[{"role":"user","content":"hi"}]}`, salt},
	} {
		if resp, b := call(t, chat, "Bearer "+tc.key, tc.body); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.body, resp.StatusCode, b)
		}
		if _, got := s.last(); got != tc.want {
			t.Errorf("engine got cache_salt %q for %s; want %q", got, tc.body, tc.want)
		}
	}
}

// FuzzUsedTokens: reading usage from any response tail never panics and
// never reports a negative count other than -1.
func FuzzUsedTokens(f *testing.F) {
	f.Add([]byte(`{"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`))
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"))
	f.Add([]byte(`{"usage": null}`))
	f.Add([]byte(`"usage"`))
	f.Fuzz(func(t *testing.T, tail []byte) {
		if n := usedTokens(tail); n < -1 {
			t.Fatalf("usedTokens = %d", n)
		}
	})
}

func TestUsedTokens(t *testing.T) {
	for _, tc := range []struct {
		tail string
		want int64
	}{
		{`{"id":"x","usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5},"kv_transfer_params":null}`, 5},
		{"data: {\"usage\":null}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n", 11},
		{`{"choices":[{"text":"\"usage\": {\"total_tokens\": 9}"}]}`, -1},
		{`{"usage" : {"total_tokens": 12}}`, 12},
		{"data: {\"usage\": null}\n\ndata: [DONE]", -1},
		{`no json at all`, -1},
		{`{"usage":{"total_tokens":-4}}`, -1},
		// A Responses stream's last event, and an Anthropic message.
		{"event: response.completed\ndata: {\"response\":{\"usage\":{\"input_tokens\":30,\"input_tokens_details\":{\"cached_tokens\":16},\"output_tokens\":5,\"total_tokens\":35}}}\n\n", 35},
		{`{"type":"message","usage":{"input_tokens":21,"cache_read_input_tokens":16,"output_tokens":3}}`, 24},
		// An Anthropic stream's message_delta counts the output alone: the
		// estimate stands.
		{"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\n\n", -1},
	} {
		if got := usedTokens([]byte(tc.tail)); got != tc.want {
			t.Errorf("usedTokens(%s) = %d, want %d", tc.tail, got, tc.want)
		}
	}
}

// hmacHex is the salt an isolated tenant's request carries when its client
// sent one of its own, computed here apart from tenant.SaltFor.
func hmacHex(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}
