package enginemetrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/internal/testkit/poll"
)

func TestParseAdapters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string
		err  string
	}{
		{"base only", `{"object":"list","data":[{"id":"qwen","parent":null}]}`, nil, ""},
		{"vllm with two adapters", `{"object":"list","data":[{"id":"qwen","root":"Qwen/Qwen3-8B","parent":null},
			{"id":"sql","root":"/loras/sql","parent":"qwen"},{"id":"chat","root":"/loras/chat","parent":"qwen"}]}`, []string{"chat", "sql"}, ""},
		{"no parent field", `{"data":[{"id":"qwen"}]}`, nil, ""},
		{"empty parent is a base model", `{"data":[{"id":"qwen","parent":""}]}`, nil, ""},
		{"empty list", `{"data":[]}`, nil, ""},
		{"not json", `<html>`, nil, "model listing"},
		{"no data", `{"object":"list"}`, nil, "no data array"},
		{"adapter without id", `{"data":[{"id":"","parent":"qwen"}]}`, nil, "adapter id of 0 bytes"},
		{"wrong type", `{"data":[{"id":"sql","parent":7}]}`, nil, "model listing"},
	}
	for _, tc := range tests {
		got, err := ParseAdapters(strings.NewReader(tc.in))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v; want an error containing %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "":
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, d)
			}
		}
	}
}

func FuzzParseAdapters(f *testing.F) {
	for _, s := range []string{`{"data":[{"id":"a","parent":"b"}]}`, `{"data":null}`, `[]`, `{"data":[{"id":1}]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseAdapters(strings.NewReader(in))
		if err != nil && got != nil {
			t.Fatalf("adapters %v with error %v", got, err)
		}
		for _, a := range got {
			if a == "" {
				t.Fatal("empty adapter name accepted")
			}
		}
	})
}

// TestScraperAdapters serves vLLM's /metrics and /v1/models over HTTP: the
// adapters arrive with the sample, follow the listing, and a broken listing
// leaves the load sample flowing with the adapters unknown.
func TestScraperAdapters(t *testing.T) {
	t.Parallel()
	var listing atomic.Value
	listing.Store(`{"data":[{"id":"qwen","parent":null},{"id":"sql","parent":"qwen"}]}`)
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("vllm:num_requests_waiting{engine=\"0\"} 3\n"))
	})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(listing.Load().(string)))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	sk := &sink{got: map[string]Sample{}}
	targets := []Target{
		{ID: "r1", URL: srv.URL + "/metrics", ModelsURL: srv.URL + "/v1/models"},
		{ID: "r2", URL: srv.URL + "/metrics"}, // no listing asked for
	}
	s, err := Start(context.Background(), func() []Target { return targets }, sk, Options{Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	adapters := func(id string) string {
		sm, ok := sk.get(id)
		if !ok {
			return "none"
		}
		if !sm.AdaptersKnown {
			return "unknown"
		}
		return strings.Join(sm.Adapters, ",")
	}
	poll.Until(t, "sql", func() bool { return adapters("r1") == "sql" })
	listing.Store(`{"data":[{"id":"qwen","parent":null},{"id":"sql","parent":"qwen"},{"id":"chat","parent":"qwen"}]}`)
	poll.Until(t, "chat and sql", func() bool { return adapters("r1") == "chat,sql" })
	listing.Store(`not json`)
	poll.Until(t, "unknown adapters", func() bool { return adapters("r1") == "unknown" })
	if sm, _ := sk.get("r1"); sm.Waiting != 3 {
		t.Errorf("load sample lost with the listing: %+v", sm)
	}
	if got := adapters("r2"); got != "unknown" {
		t.Errorf("r2 without a models URL: adapters %s; want unknown", got)
	}
}
