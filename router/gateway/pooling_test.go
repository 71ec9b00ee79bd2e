package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/replicas"
)

// startSims builds vllm-sim from this tree and runs one per args list,
// each serving the model named first; they stop when the test ends.
func startSims(t *testing.T, args ...[]string) []string {
	t.Helper()
	bin, err := simproc.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, len(args))
	for i, a := range args {
		p, err := simproc.Start(context.Background(), simproc.Options{
			Binary: bin, Args: append(a, "--host", "127.0.0.1", "--port", "0", "--sim-latency=false"),
		}, 2*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		addrs[i] = strings.TrimPrefix(p.URL, "http://")
	}
	return addrs
}

// TestPoolingThroughTheRouter: a chat model, an embedding model and a
// one-label classifier (a cross-encoder), each a vllm-sim behind one
// router. Every pooling path reaches a replica whose task serves it and
// comes back as the engine answered; a generate request to a pooling
// model, or a pooling request to the chat model, is a 400 naming the
// problem that reaches no engine; requests are counted by endpoint.
func TestPoolingThroughTheRouter(t *testing.T) {
	addrs := startSims(t,
		[]string{"chat-m"},
		[]string{"emb-m", "--runner", "pooling"},
		[]string{"cls-m", "--runner", "pooling", "--convert", "classify", "--sim-num-labels", "1"})
	models := index.NewModels(index.Options{})
	tracker := load.NewTracker(load.WithPrefillRate(0))
	set := replicas.New(ingest.New(models, ingest.Options{}), tracker, replicas.Options{})
	set.Replace([]replicas.Replica{
		{ID: "chat", Model: "chat-m", Address: addrs[0], BlockSize: 16, Source: "static"},
		{ID: "emb", Model: "emb-m", Address: addrs[1], BlockSize: 16, Source: "static", Task: replicas.TaskEmbed},
		{ID: "cls", Model: "cls-m", Address: addrs[2], BlockSize: 16, Source: "static", Task: replicas.TaskClassify},
	})
	h := buildHarness(t, set, tracker, models, nil)
	const input = `"input":"w1 w2 w3","queries":"w1","documents":["w1","w2"],"query":"w1"`
	tests := []struct {
		path, model string
		status      int
		replica     string // the replica that must answer; "" for none
		want        string // in the answer
	}{
		{"/v1/embeddings", "emb-m", 200, "emb", `"object":"embedding"`},
		{"/pooling", "emb-m", 200, "emb", `"object":"pooling"`},
		{"/pooling", "cls-m", 200, "cls", `"object":"pooling"`},
		{"/classify", "cls-m", 200, "cls", `"num_classes":1`},
		{"/score", "emb-m", 200, "emb", `"object":"score"`},
		{"/v1/score", "cls-m", 200, "cls", `"object":"score"`},
		{"/rerank", "emb-m", 200, "emb", `"relevance_score"`},
		{"/v1/rerank", "cls-m", 200, "cls", `"relevance_score"`},
		{"/v2/rerank", "emb-m", 200, "emb", `"relevance_score"`},
		{"/v1/chat/completions", "chat-m", 200, "chat", `"chat.completion"`},
		{"/v1/chat/completions", "emb-m", 400, "", "The model `emb-m` is a pooling model (task embed) and does not serve /v1/chat/completions."},
		{"/v1/completions", "cls-m", 400, "", "is a pooling model (task classify) and does not serve /v1/completions"},
		{"/v1/embeddings", "chat-m", 400, "", "The model `chat-m` is a generative model and does not serve /v1/embeddings."},
		{"/classify", "emb-m", 400, "", "does not serve /classify"},
		{"/v1/embeddings", "nope", 404, "", "does not exist"},
	}
	for _, tt := range tests {
		body := fmt.Sprintf(`{"model":%q,%s,"prompt":"w1","messages":[{"role":"user","content":"w1"}],"max_tokens":2}`, tt.model, input)
		resp, b := post(t, h.srv.URL+tt.path, body)
		if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) || resp.Header.Get(HeaderReplica) != tt.replica {
			t.Errorf("%s %s: %d from %q: %s; want %d from %q with %q", tt.path, tt.model, resp.StatusCode, resp.Header.Get(HeaderReplica), b, tt.status, tt.replica, tt.want)
			continue
		}
		if tt.status != 200 {
			openAIError(t, b)
			continue
		}
		var answer struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				TotalTokens  int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &answer); err != nil || answer.Usage.PromptTokens == 0 || answer.Usage.TotalTokens < answer.Usage.PromptTokens {
			t.Errorf("%s %s: usage of %s; want the engine's", tt.path, tt.model, b)
		}
	}
	_, rb := get(t, h.admin.URL+"/admin/replicas")
	for _, s := range []string{`"id":"chat"`, `"task":"generate"`, `"task":"embed"`, `"task":"classify"`} {
		if !strings.Contains(string(rb), s) {
			t.Errorf("/admin/replicas lacks %s: %s", s, rb)
		}
	}
	_, mb := get(t, h.admin.URL+"/metrics")
	for _, s := range []string{
		`llmgw_requests_total{code="200",endpoint="embeddings"} 1`, `llmgw_requests_total{code="200",endpoint="pooling"} 2`,
		`llmgw_requests_total{code="200",endpoint="score"} 2`, `llmgw_requests_total{code="200",endpoint="rerank"} 3`,
		`llmgw_requests_total{code="200",endpoint="classify"} 1`, `llmgw_requests_total{code="400",endpoint="classify"} 1`,
		`llmgw_requests_total{code="400",endpoint="embeddings"} 1`, `llmgw_requests_total{code="404",endpoint="embeddings"} 1`,
	} {
		if !strings.Contains(string(mb), s) {
			t.Errorf("/metrics lacks %s", s)
		}
	}
}

// TestPoolingTenancy: a pooling request meets the key, its tenant's
// model access and rate limits as a chat request does, and is charged
// the tokens the engine's usage reports.
func TestPoolingTenancy(t *testing.T) {
	h, _ := authHarness(t, "7", nil)
	all := h.set.All()
	for i := range all {
		all[i].Task = replicas.TaskEmbed
	}
	h.set.Replace(all)
	url := h.srv.URL + "/v1/embeddings"
	body := `{"model":"m","input":"hello there"}`
	for _, tc := range []struct {
		name, key string
		code      int
	}{
		{"no key", "", 401},
		{"model not allowed", "Bearer " + onlyOKey, 404},
		{"allowed", "Bearer " + openKey, 200},
	} {
		if resp, b := call(t, url, tc.key, body); resp.StatusCode != tc.code {
			t.Errorf("%s: %d %s; want %d", tc.name, resp.StatusCode, b, tc.code)
		}
	}
	for i := range 3 {
		if resp, b := call(t, url, "Bearer "+tokensKey, body); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
	}
	poll.Until(t, "every request's usage to be charged", func() bool {
		u := h.limits.Own()["tokens"]
		return u.Tokens == 21 && u.Requests == 3 && u.InFlight == 0
	})
}
