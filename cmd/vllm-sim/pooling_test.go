package main

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
)

// request sends body to path with method and returns the status, the
// Allow header and the decoded JSON answer.
func request(t *testing.T, p proc, method, path, body string) (int, string, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, p.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d %q is not JSON: %v", method, path, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, resp.Header.Get("Allow"), out
}

// TestRoutesFollowTheTask: vLLM's build_app registers the generate routes
// only for a generate model and each pooling route only for the pooling
// tasks that bring it (vllm/entrypoints/pooling/factories.py:
// register_pooling_api_routers, utils.py: enable_scoring_api); a route
// not registered answers FastAPI's 404.
func TestRoutesFollowTheTask(t *testing.T) {
	const input = `{"input":"w1 w2 w3","prompt":"w1","messages":[{"role":"user","content":"w1"}],"queries":"w1","documents":["w2"],"query":"w1","max_tokens":1}`
	paths := []string{"/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/pooling", "/classify", "/score", "/v1/score", "/rerank", "/v1/rerank", "/v2/rerank"}
	tests := []struct {
		name  string
		args  []string
		serve string // the paths answering 200, by index in paths
	}{
		{"generate", nil, "01"},
		{"embed", []string{"--runner", "pooling"}, "2356789"},
		{"embed by convert", []string{"--convert", "embed"}, "2356789"},
		{"classify", []string{"--runner", "pooling", "--convert", "classify"}, "34"},
		{"cross-encoder", []string{"--runner", "pooling", "--convert", "classify", "--sim-num-labels", "1"}, "3456789"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startSim(t, nil, tt.args...)
			for i, path := range paths {
				st, _, body := request(t, p, http.MethodPost, path, input)
				want := http.StatusNotFound
				if strings.ContainsRune(tt.serve, rune('0'+i)) {
					want = http.StatusOK
				}
				if st != want || (want == http.StatusNotFound && body["detail"] != "Not Found") {
					t.Errorf("%s: %d %v; want %d", path, st, body, want)
				}
			}
		})
	}
}

// TestUnknownPathAndMethodAsFastAPI: a path no route has is 404
// {"detail":"Not Found"}, a route's path with another method 405
// {"detail":"Method Not Allowed"} naming the allowed methods, as
// Starlette's router answers.
func TestUnknownPathAndMethodAsFastAPI(t *testing.T) {
	p := startSim(t, nil)
	tests := []struct {
		method, path string
		status       int
		detail       string
		allow        string
	}{
		{http.MethodGet, "/no/such/path", 404, "Not Found", ""},
		{http.MethodPost, "/v1/nope", 404, "Not Found", ""},
		{http.MethodPost, "/v1/models", 405, "Method Not Allowed", "GET"},
		{http.MethodGet, "/v1/chat/completions", 405, "Method Not Allowed", "POST"},
	}
	for _, tt := range tests {
		st, allow, body := request(t, p, tt.method, tt.path, "")
		if st != tt.status || body["detail"] != tt.detail || allow != tt.allow {
			t.Errorf("%s %s: %d %v Allow %q; want %d %q Allow %q", tt.method, tt.path, st, body, allow, tt.status, tt.detail, tt.allow)
		}
	}
}

type embeddingAnswer struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Index     int       `json:"index"`
		Object    string    `json:"object"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens     int  `json:"prompt_tokens"`
		TotalTokens      int  `json:"total_tokens"`
		CompletionTokens *int `json:"completion_tokens"`
	} `json:"usage"`
}

// TestEmbeddingsShapeAndCache: /v1/embeddings answers vLLM's
// EmbeddingResponse, one normalised vector per input, a pure function of
// the tokens; the prompt goes through the KV cache, so its full blocks
// are cached afterwards, unless the pooler reads every position (MEAN),
// which turns prefix caching off by default (is_prefix_caching_supported).
func TestEmbeddingsShapeAndCache(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantBlocks bool
	}{
		{"last pooling caches", []string{"--runner", "pooling", "--block-size", "4"}, true},
		{"mean pooling does not", []string{"--runner", "pooling", "--block-size", "4", "--pooler-config", `{"seq_pooling_type":"MEAN"}`}, false},
		{"mean pooling with the flag does", []string{"--runner", "pooling", "--block-size", "4", "--pooler-config", `{"seq_pooling_type":"MEAN"}`, "--enable-prefix-caching"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startSim(t, nil, tt.args...)
			body := `{"model":"sim-model","input":[` + quote(words(0, 12)) + `,` + quote(words(0, 12)) + `,"w99"]}`
			var a embeddingAnswer
			if st := post(t, p.URL+"/v1/embeddings", body, &a); st != 200 {
				t.Fatalf("status %d", st)
			}
			if a.Object != "list" || a.Model != "sim-model" || len(a.Data) != 3 || a.Data[2].Index != 2 || a.Data[0].Object != "embedding" {
				t.Fatalf("answer %+v", a)
			}
			if a.Usage.PromptTokens == 0 || a.Usage.TotalTokens != a.Usage.PromptTokens || a.Usage.CompletionTokens == nil || *a.Usage.CompletionTokens != 0 {
				t.Errorf("usage %+v; want prompt tokens as the total, no completion tokens", a.Usage)
			}
			var norm float64
			for _, x := range a.Data[0].Embedding {
				norm += x * x
			}
			if math.Abs(norm-1) > 1e-9 || len(a.Data[0].Embedding) != len(a.Data[2].Embedding) {
				t.Errorf("squared norm %v; want 1", norm)
			}
			same, other := a.Data[0].Embedding, a.Data[2].Embedding
			if !equalVec(same, a.Data[1].Embedding) || equalVec(same, other) {
				t.Error("equal inputs must embed equally, different ones differently")
			}
			if got := len(dump(t, p)) > 0; got != tt.wantBlocks {
				t.Errorf("blocks cached: %v; want %v", got, tt.wantBlocks)
			}
		})
	}
}

func equalVec(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestScoreAndRerank: a bi-encoder scores by cosine similarity, so a
// document equal to the query scores 1 and ranks first; rerank sorts by
// relevance and keeps top_n, with usage of prompt and total tokens only.
func TestScoreAndRerank(t *testing.T) {
	p := startSim(t, nil, "--runner", "pooling")
	var score struct {
		Data []struct {
			Index  int     `json:"index"`
			Object string  `json:"object"`
			Score  float64 `json:"score"`
		} `json:"data"`
	}
	if st := post(t, p.URL+"/score", `{"model":"sim-model","queries":"w1 w2","documents":["w7 w8","w1 w2"]}`, &score); st != 200 || len(score.Data) != 2 {
		t.Fatalf("score: %d %+v", st, score)
	}
	if math.Abs(score.Data[1].Score-1) > 1e-9 || score.Data[0].Score >= score.Data[1].Score || score.Data[0].Object != "score" {
		t.Errorf("scores %+v; want the equal document at 1, above the other", score.Data)
	}
	var rr struct {
		ID      string `json:"id"`
		Results []struct {
			Index          int               `json:"index"`
			Document       map[string]string `json:"document"`
			RelevanceScore float64           `json:"relevance_score"`
		} `json:"results"`
		Usage map[string]int `json:"usage"`
	}
	if st := post(t, p.URL+"/v2/rerank", `{"query":"w1 w2","documents":["w7 w8","w1 w2","w9"],"top_n":2}`, &rr); st != 200 {
		t.Fatalf("rerank: %d", st)
	}
	if len(rr.Results) != 2 || rr.Results[0].Index != 1 || rr.Results[0].Document["text"] != "w1 w2" || rr.Results[0].RelevanceScore < rr.Results[1].RelevanceScore {
		t.Errorf("results %+v; want the equal document first, two results", rr.Results)
	}
	if len(rr.Usage) != 2 || rr.Usage["prompt_tokens"] == 0 || rr.Usage["total_tokens"] != rr.Usage["prompt_tokens"] {
		t.Errorf("usage %v; want prompt_tokens and total_tokens only", rr.Usage)
	}
	var bad completion
	if st := post(t, p.URL+"/score", `{"queries":["a","b"],"documents":["c","d","e"]}`, &bad); st != 400 || bad.Error == nil || !strings.Contains(bad.Error.Message, "1:1, 1:N or N:N") {
		t.Errorf("mismatched sides: %d %+v", st, bad.Error)
	}
}
