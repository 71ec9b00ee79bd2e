package gateway

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestUtilityPaths: vLLM's /tokenize, /detokenize and /version reach a
// replica with the client's body as it came and come back as the engine
// answered; a bad body or an unknown model is refused in OpenAI's shape
// without reaching one; none of them is logged as a routing decision.
func TestUtilityPaths(t *testing.T) {
	type seen struct{ method, path, body, auth string }
	var mu sync.Mutex
	var got []seen
	engine := backend(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, string(b), r.Header.Get("Authorization")})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"engine_answered":"`+r.URL.Path+`"}`)
	})
	h := newHarness(t, 1<<20, engine)
	cases := []struct {
		name, method, path, body string
		code                     int
		reaches                  bool
		contains                 string
	}{
		{"tokenize", "POST", "/tokenize", `{"model":"m","prompt":"hello"}`, 200, true, `"engine_answered":"/tokenize"`},
		{"detokenize, the key's only model", "POST", "/detokenize", `{"tokens":[1,2,3]}`, 200, true, `"engine_answered":"/detokenize"`},
		{"version", "GET", "/version", "", 200, true, `"engine_answered":"/version"`},
		{"unknown model", "POST", "/tokenize", `{"model":"nope","prompt":"x"}`, 404, false, "does not exist"},
		{"not JSON", "POST", "/tokenize", `model=m`, 400, false, "must be a JSON object"},
		{"model not a string", "POST", "/detokenize", `{"model":1,"tokens":[1]}`, 400, false, "model must be a string"},
	}
	for _, tc := range cases {
		mu.Lock()
		before := len(got)
		mu.Unlock()
		req, _ := http.NewRequest(tc.method, h.srv.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer the-clients-key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.contains) {
			t.Errorf("%s: %d %s; want %d with %q", tc.name, resp.StatusCode, b, tc.code, tc.contains)
		}
		if tc.code != 200 {
			openAIError(t, b)
		}
		mu.Lock()
		reached := got[before:]
		mu.Unlock()
		switch {
		case !tc.reaches && len(reached) != 0:
			t.Errorf("%s reached the engine: %+v", tc.name, reached)
		case tc.reaches && (len(reached) != 1 || reached[0].path != tc.path || reached[0].method != tc.method || reached[0].body != tc.body):
			t.Errorf("%s: the engine saw %+v; want one %s %s with the client's body", tc.name, reached, tc.method, tc.path)
		case tc.reaches && reached[0].auth != "":
			t.Errorf("%s: the client's Authorization reached the engine: %q", tc.name, reached[0].auth)
		}
	}
	if d := h.planner.RecentDecisions(); len(d) != 0 {
		t.Errorf("utility requests were logged as routing decisions: %+v", d)
	}
	_, mb := get(t, h.admin.URL+"/metrics")
	metrics := string(mb)
	for _, s := range []string{`llmgw_requests_total{code="200",endpoint="tokenize"} 1`, `llmgw_requests_total{code="404",endpoint="tokenize"} 1`,
		`llmgw_requests_total{code="200",endpoint="version"} 1`, `llmgw_requests_total{code="400",endpoint="detokenize"} 1`} {
		if !strings.Contains(metrics, s) {
			t.Errorf("/metrics lacks %s", s)
		}
	}
}
