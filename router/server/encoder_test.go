package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/router/server"
)

// TestWithEncoder: a sim model is tokenized on its engines unless a test
// injects vllm-sim's tokenizer with WithEncoder. These replicas have no
// /tokenize, so without the encoder the prompt is keyed approx and the
// failure counted; with it, exactly.
func TestWithEncoder(t *testing.T) {
	f := newFleet(t)
	hcl := `model "m" {
  sim = true
}`
	for _, tc := range []struct {
		name      string
		opts      []server.Option
		exact     bool
		tokenizeN string // the /metrics line of failed engine calls
	}{
		{"engine tokenization, failing", nil, false, `llmgw_engine_tokenize_total{model="m",result="error"} 1`},
		{"injected sim tokenizer", []server.Option{server.WithEncoder("m", simencoder.Encoder{})}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := server.Start(context.Background(), routerConfig(t, f, hcl), nil, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("route me exactly ", 20) + `"}]}`
			resp, err := http.Post("http://"+s.AdminAddr()+"/admin/explain/chat", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var ex struct {
				Exact bool `json:"exact_keys"`
			}
			err = json.NewDecoder(resp.Body).Decode(&ex)
			resp.Body.Close()
			if err != nil || ex.Exact != tc.exact {
				t.Fatalf("explain: exact keys %v (%v); want %v", ex.Exact, err, tc.exact)
			}
			m, err := http.Get("http://" + s.AdminAddr() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			metrics, _ := io.ReadAll(m.Body)
			m.Body.Close()
			if tc.tokenizeN != "" && !strings.Contains(string(metrics), tc.tokenizeN) {
				t.Errorf("/metrics lacks %s", tc.tokenizeN)
			}
			if tc.tokenizeN == "" && strings.Contains(string(metrics), `llmgw_engine_tokenize_total{`) {
				t.Error("an injected encoder still asked the engines")
			}
		})
	}
}
