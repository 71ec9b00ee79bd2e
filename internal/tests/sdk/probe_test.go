package sdk_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// endpoint is one API path a check needs. engine says whether vllm-sim
// must serve it too (the router forwards it), or the router alone (the
// stored responses it keeps itself).
type endpoint struct {
	method, path string
	engine       bool
}

func (e endpoint) String() string { return e.method + " " + e.path }

var (
	getModels       = endpoint{http.MethodGet, "/v1/models", true}
	postChat        = endpoint{http.MethodPost, "/v1/chat/completions", true}
	postResponses   = endpoint{http.MethodPost, "/v1/responses", true}
	getResponse     = endpoint{http.MethodGet, "/v1/responses/resp_sdkprobe", false}
	deleteResponse  = endpoint{http.MethodDelete, "/v1/responses/resp_sdkprobe", false}
	postMessages    = endpoint{http.MethodPost, "/v1/messages", true}
	postCountTokens = endpoint{http.MethodPost, "/v1/messages/count_tokens", true}
	postEmbeddings  = endpoint{http.MethodPost, "/v1/embeddings", true}
)

// served says, for each endpoint a check may need, why it is missing, or
// "" when both the router and (for engine endpoints) vllm-sim serve it.
type served map[endpoint]string

// probe asks router A and the replicas for every endpoint. Only the
// router's own "no such endpoint" 404, or the simulator mux's plain
// "404 page not found", means an endpoint is missing: any other answer
// to an empty body (400, 401, 404 for an unknown id) comes from a
// handler that exists.
func probe(t *testing.T, f *fleet) served {
	t.Helper()
	s := served{}
	for _, e := range []endpoint{getModels, postChat, postResponses, getResponse, deleteResponse, postMessages, postCountTokens} {
		s[e] = missing(t, f.a.base(), f.chatSim.URL, e)
	}
	if f.embedSim == nil {
		s[postEmbeddings] = f.noPooling
	} else {
		s[postEmbeddings] = missing(t, f.a.base(), f.embedSim.URL, postEmbeddings)
	}
	return s
}

// missing says why e is not served through the router at routerURL to
// the engine at engineURL, or "".
func missing(t *testing.T, routerURL, engineURL string, e endpoint) string {
	t.Helper()
	code, body := send(t, routerURL, e)
	if code == http.StatusNotFound && strings.Contains(body, "no such endpoint") {
		return "llmgw-router has no " + e.String() + " yet (it answers: no such endpoint)"
	}
	if !e.engine {
		return ""
	}
	code, body = send(t, engineURL, e)
	if code == http.StatusNotFound && strings.TrimSpace(body) == "404 page not found" {
		return "vllm-sim has no " + e.String() + " yet (its mux answers 404 page not found)"
	}
	return ""
}

// send makes one probe request, with the client key in both places the
// SDKs put it, and returns the status and body.
func send(t *testing.T, base string, e endpoint) (int, string) {
	t.Helper()
	var body io.Reader
	if e.method == http.MethodPost {
		body = bytes.NewReader([]byte(`{}`))
	}
	req, err := http.NewRequest(e.method, base+e.path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("X-Api-Key", apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("probe %s at %s: %v", e, base, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMissingReadsOnlyTheNoSuchEndpointAnswers pins what counts as a
// missing endpoint against stand-ins for the router and the simulator.
func TestMissingReadsOnlyTheNoSuchEndpointAnswers(t *testing.T) {
	// answer is the URL of a server that answers every request so.
	answer := func(code int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(code)
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	for _, tc := range []struct {
		name           string
		router, engine string
		e              endpoint
		wantMissing    bool
		about          string
	}{
		{"router lacks it", answer(404, `{"error":{"message":"no such endpoint: POST /v1/messages"}}`), answer(400, "bad"), postMessages, true, "llmgw-router has no POST /v1/messages"},
		{"engine lacks it", answer(400, `{"error":{"message":"model is required"}}`), answer(404, "404 page not found\n"), postMessages, true, "vllm-sim has no POST /v1/messages"},
		{"both serve it", answer(400, `{"error":{"message":"model is required"}}`), answer(400, "bad"), postMessages, false, ""},
		{"an unknown id is served", answer(404, `{"error":{"message":"Response with id 'resp_sdkprobe' not found."}}`), answer(404, "404 page not found\n"), getResponse, false, ""},
		{"auth refusal is served", answer(401, `{"error":{"message":"invalid api key"}}`), answer(400, "bad"), postChat, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := missing(t, tc.router, tc.engine, tc.e)
			if (got != "") != tc.wantMissing || !strings.HasPrefix(got, tc.about) {
				t.Errorf("missing = %q; want missing %v, starting with %q", got, tc.wantMissing, tc.about)
			}
		})
	}
}
