package enginemetrics

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/internal/testkit/poll"
)

type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestScraperEngineKey serves /metrics open and /v1/models behind a key, as
// vLLM with --api-key does: a target with the key learns its adapters and
// sends the key as a bearer token on both; one without it keeps its load
// samples, learns no adapters and is warned about once, without the key in
// the log.
func TestScraperEngineKey(t *testing.T) {
	t.Parallel()
	const key = "engine-secret"
	var mu sync.Mutex
	seen := map[string]string{} // path+target -> Authorization
	bareListings := 0
	mux := http.NewServeMux()
	mux.HandleFunc("/{id}/metrics", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.PathValue("id")+" metrics"] = r.Header.Get("Authorization")
		mu.Unlock()
		_, _ = w.Write([]byte("vllm:num_requests_waiting{engine=\"0\"} 2\n"))
	})
	mux.HandleFunc("/{id}/v1/models", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.PathValue("id")+" models"] = r.Header.Get("Authorization")
		if r.PathValue("id") == "bare" {
			bareListings++
		}
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"Unauthorized"}`))
			return
		}
		_, _ = w.Write([]byte(`{"data":[{"id":"qwen","parent":null},{"id":"sql","parent":"qwen"}]}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	logs := &lockedLog{}
	targets := []Target{
		{ID: "keyed", URL: srv.URL + "/keyed/metrics", ModelsURL: srv.URL + "/keyed/v1/models", APIKey: key},
		{ID: "bare", URL: srv.URL + "/bare/metrics", ModelsURL: srv.URL + "/bare/v1/models"},
	}
	sk := &sink{got: map[string]Sample{}}
	s, err := Start(context.Background(), func() []Target { return targets }, sk, Options{
		Interval: 20 * time.Millisecond, Timeout: 5 * time.Second, Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	poll.Until(t, "the keyed target's adapters", func() bool {
		sm, ok := sk.get("keyed")
		return ok && sm.AdaptersKnown && strings.Join(sm.Adapters, ",") == "sql"
	})
	poll.Until(t, "several rounds of the bare target", func() bool {
		return strings.Count(logs.String(), "refused the router's engine key") >= 1 && func() bool {
			sm, ok := sk.get("bare")
			return ok && sm.Waiting == 2
		}()
	})
	mu.Lock()
	after := bareListings
	mu.Unlock()
	poll.Until(t, "three more refused listings", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return bareListings >= after+3
	})
	if sm, _ := sk.get("bare"); sm.AdaptersKnown {
		t.Errorf("bare target: adapters %v known without the key", sm.Adapters)
	}
	if n := strings.Count(logs.String(), "refused the router's engine key"); n != 1 {
		t.Errorf("%d warnings; want one:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), key) {
		t.Errorf("the log shows the key:\n%s", logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]string{"keyed metrics": "Bearer " + key, "keyed models": "Bearer " + key, "bare metrics": "", "bare models": ""}
	for k, v := range want {
		if seen[k] != v {
			t.Errorf("%s: Authorization %q; want %q", k, seen[k], v)
		}
	}
}
