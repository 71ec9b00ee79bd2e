package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/router/auth"
	"github.com/llmgw/llmgw/router/respstore"
	"github.com/llmgw/llmgw/router/scheduler"
)

// respEngine answers the Responses API as a stateless vLLM does: the
// response's id is the request's request_id, its output one assistant
// message naming the turn (how many user items the input holds). It
// records each request's body.
type respEngine struct {
	mu   sync.Mutex
	got  []map[string]any
	addr string
}

func newRespEngine(t *testing.T) *respEngine {
	e := &respEngine{}
	e.addr = backend(t, e.serve)
	return e
}

func (e *respEngine) requests() []map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]map[string]any(nil), e.got...)
}

func (e *respEngine) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	raw, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/responses" || json.Unmarshal(raw, &body) != nil {
		http.Error(w, `{"error":{"message":"bad request to the test engine"}}`, http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.got = append(e.got, body)
	e.mu.Unlock()
	users := 0
	for _, it := range body["input"].([]any) {
		if m, _ := it.(map[string]any); m["role"] == "user" {
			users++
		}
	}
	// Sent a stateless request, the engine echoes previous_response_id
	// null and store false, as vLLM echoes the request's fields.
	resp := fmt.Sprintf(`{"id":%q,"object":"response","status":"completed","model":"m","previous_response_id":null,"store": false,"output":[{"id":"msg_%d","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"reply to turn %d","annotations":[]}]}],"usage":{"input_tokens":40,"input_tokens_details":{"cached_tokens":0},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":44}}`,
		body["request_id"], users, users)
	if body["stream"] != true {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":%q,\"status\":\"in_progress\",\"output\":[]}}\n\n", body["request_id"])
	w.(http.Flusher).Flush()
	fmt.Fprintf(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"reply\"}\n\n")
	w.(http.Flusher).Flush()
	fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":%s}\n\n", resp)
}

// respCall sends method path with body (if any) under key.
func respCall(t *testing.T, method, url, key, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// create posts a Responses request and returns the id of its answer.
func create(t *testing.T, url, key, prev string, stream bool) string {
	t.Helper()
	body := `{"model":"m","input":"next question","stream":` + fmt.Sprint(stream)
	if prev != "" {
		body += `,"previous_response_id":"` + prev + `"`
	}
	code, b := respCall(t, http.MethodPost, url+"/v1/responses", key, body+"}")
	if code != http.StatusOK {
		t.Fatalf("POST /v1/responses: %d %s", code, b)
	}
	if stream {
		i := strings.LastIndex(string(b), `"response":`)
		if i < 0 {
			t.Fatalf("stream without a final response: %s", b)
		}
		b = b[i+len(`"response":`):]
	}
	var r struct{ ID string }
	_ = json.NewDecoder(strings.NewReader(string(b))).Decode(&r)
	if _, ok := respstore.HolderOf(r.ID); !ok {
		t.Fatalf("answer's id %q is not a router-made id: %s", r.ID, b)
	}
	return r.ID
}

// TestResponsesChain: a three-turn previous_response_id chain, plain and
// streamed turns mixed, reaches the engine as stateless requests carrying
// the whole conversation, named by the router's ids; the last response
// can be read and deleted; an unknown previous id never reaches an engine.
func TestResponsesChain(t *testing.T) {
	e := newRespEngine(t)
	h := newHarness(t, 1<<20, e.addr)
	id1 := create(t, h.srv.URL, "", "", false)
	id2 := create(t, h.srv.URL, "", id1, true)
	id3 := create(t, h.srv.URL, "", id2, false)
	got := e.requests()
	if len(got) != 3 {
		t.Fatalf("engine got %d requests, want 3", len(got))
	}
	for i, want := range []struct {
		id    string
		items int
	}{{id1, 1}, {id2, 3}, {id3, 5}} {
		r := got[i]
		if r["request_id"] != want.id || r["store"] != false || r["previous_response_id"] != nil {
			t.Errorf("turn %d reached the engine with request_id %v, store %v, previous_response_id %v; want %s, false, none",
				i+1, r["request_id"], r["store"], r["previous_response_id"], want.id)
		}
		if items := r["input"].([]any); len(items) != want.items {
			t.Errorf("turn %d: engine got %d input items, want %d (history, then the new input)", i+1, len(items), want.items)
		}
	}
	if out := got[2]["input"].([]any)[3].(map[string]any); out["role"] != "assistant" || !strings.Contains(fmt.Sprint(out["content"]), "reply to turn 2") {
		t.Errorf("turn 3's fourth item is %v; want turn 2's streamed answer", out)
	}
	code, b := respCall(t, http.MethodGet, h.srv.URL+"/v1/responses/"+id3, "", "")
	if code != http.StatusOK || !strings.Contains(string(b), "reply to turn 3") || !strings.Contains(string(b), id3) {
		t.Fatalf("GET %s: %d %s", id3, code, b)
	}
	// The client sees what it sent, not what the stateless engine echoed.
	var echoed struct {
		Prev  *string `json:"previous_response_id"`
		Store bool    `json:"store"`
	}
	if err := json.Unmarshal(b, &echoed); err != nil || echoed.Prev == nil || *echoed.Prev != id2 || !echoed.Store {
		t.Errorf("turn 3 reads previous_response_id %v, store %v (%v); want %s, true", echoed.Prev, echoed.Store, err, id2)
	}
	if code, b = respCall(t, http.MethodDelete, h.srv.URL+"/v1/responses/"+id3, "", ""); code != http.StatusOK || !strings.Contains(string(b), `"deleted":true`) {
		t.Fatalf("DELETE %s: %d %s", id3, code, b)
	}
	if code, _ = respCall(t, http.MethodGet, h.srv.URL+"/v1/responses/"+id3, "", ""); code != http.StatusNotFound {
		t.Fatalf("GET after DELETE: %d, want 404", code)
	}
	code, b = respCall(t, http.MethodPost, h.srv.URL+"/v1/responses", "", `{"model":"m","input":"x","previous_response_id":"`+id3+`"}`)
	if code != http.StatusNotFound || openAIError(t, b).Code != "previous_response_not_found" {
		t.Fatalf("continuing a deleted response: %d %s; want 404 previous_response_not_found", code, b)
	}
	if n := len(e.requests()); n != 3 {
		t.Fatalf("a refused continuation reached the engine (%d requests)", n)
	}
	if code, b = respCall(t, http.MethodPost, h.srv.URL+"/v1/responses/"+id2+"/cancel", "", ""); code != http.StatusBadRequest {
		t.Errorf("cancel of a synchronous response: %d %s; want 400", code, b)
	}
}

// TestResponsesStoreFalse: a response made with store false is not kept.
func TestResponsesStoreFalse(t *testing.T) {
	e := newRespEngine(t)
	h := newHarness(t, 1<<20, e.addr)
	code, b := respCall(t, http.MethodPost, h.srv.URL+"/v1/responses", "", `{"model":"m","input":"x","store":false}`)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, b)
	}
	var r struct{ ID string }
	_ = json.Unmarshal(b, &r)
	if code, _ := respCall(t, http.MethodGet, h.srv.URL+"/v1/responses/"+r.ID, "", ""); code != http.StatusNotFound {
		t.Fatalf("GET of a store:false response: %d, want 404", code)
	}
}

// TestResponsesTenants: a response is its tenant's: another key can
// neither read, continue nor delete it, and is told it does not exist.
func TestResponsesTenants(t *testing.T) {
	e := newRespEngine(t)
	keys, err := auth.Open(auth.Options{File: keysFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, func(d *testDeps, _ *scheduler.Config) { d.Auth = keys }, e.addr)
	id := create(t, h.srv.URL, openKey, "", false)
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/responses/" + id, ""},
		{http.MethodDelete, "/v1/responses/" + id, ""},
		{http.MethodPost, "/v1/responses", `{"model":"m","input":"x","previous_response_id":"` + id + `"}`},
	} {
		if code, b := respCall(t, c.method, h.srv.URL+c.path, limitedKey, c.body); code != http.StatusNotFound {
			t.Errorf("another tenant's %s %s: %d %s; want 404", c.method, c.path, code, b)
		}
	}
	if code, _ := respCall(t, http.MethodGet, h.srv.URL+"/v1/responses/"+id, openKey, ""); code != http.StatusOK {
		t.Fatalf("the owner's GET after another tenant's attempts: %d", code)
	}
	if n := len(e.requests()); n != 1 {
		t.Fatalf("engine got %d requests, want the owner's one", n)
	}
}

// TestResponsesAcrossRouters: turns of one chain alternate between two
// routers, each holding the turns it served; the other fetches them.
func TestResponsesAcrossRouters(t *testing.T) {
	e := newRespEngine(t)
	fleets := map[respstore.Tag]string{}
	var mu sync.Mutex
	router := func() *harness {
		f := &respstore.Fleet{Local: respstore.New(respstore.Options{}), Client: http.DefaultClient, Token: "peer-token"}
		peer := httptest.NewServer(f.Handler())
		t.Cleanup(peer.Close)
		tag := respstore.TagOf(peer.Listener.Addr().String())
		mu.Lock()
		fleets[tag] = peer.URL
		mu.Unlock()
		f.Self = func() respstore.Tag { return tag }
		f.Holder = func(t respstore.Tag) (string, bool) {
			mu.Lock()
			defer mu.Unlock()
			u, ok := fleets[t]
			return strings.TrimSuffix(u, "/"), ok
		}
		return newHarnessWith(t, func(d *testDeps, _ *scheduler.Config) { d.Conversations = f }, e.addr)
	}
	a, b := router(), router()
	id1 := create(t, a.srv.URL, "", "", false)
	id2 := create(t, b.srv.URL, "", id1, true)
	id3 := create(t, a.srv.URL, "", id2, false)
	if items := e.requests()[2]["input"].([]any); len(items) != 5 {
		t.Fatalf("the third turn reached the engine with %d items, want 5", len(items))
	}
	if code, body := respCall(t, http.MethodGet, b.srv.URL+"/v1/responses/"+id3, "", ""); code != http.StatusOK || !strings.Contains(string(body), id3) {
		t.Fatalf("router b reading a's response: %d %s", code, body)
	}
}

// TestResponsesStreamFailsInItsOwnShape: a Responses stream whose replica
// dies mid-way ends with the Responses API's error event, and the cut
// response is not kept.
func TestResponsesStreamFailsInItsOwnShape(t *testing.T) {
	var id string
	engine := backend(t, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			RequestID string `json:"request_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		id = body.RequestID
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":%q,\"status\":\"in_progress\"}}\n\n", id)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	h := newHarness(t, 1<<20, engine)
	resp, b := post(t, h.srv.URL+"/v1/responses", `{"model":"m","input":"x","stream":true}`)
	s := string(b)
	i := strings.Index(s, "event: error\ndata: ")
	if resp.StatusCode != http.StatusOK || i < 0 || strings.Contains(s, "[DONE]") {
		t.Fatalf("%d %q; want the created event, then an error event, no [DONE]", resp.StatusCode, s)
	}
	var ev struct{ Type, Code, Message string }
	if err := json.Unmarshal([]byte(strings.TrimSpace(s[i+len("event: error\ndata: "):])), &ev); err != nil || ev.Type != "error" || ev.Message == "" {
		t.Fatalf("error event %q: %v", s[i:], err)
	}
	if code, _ := respCall(t, http.MethodGet, h.srv.URL+"/v1/responses/"+id, "", ""); code != http.StatusNotFound {
		t.Fatalf("GET of a cut response: %d, want 404", code)
	}
}

func TestSetMember(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"previous_response_id":null,"x":1}`, `{"previous_response_id":"resp_a","x":1}`},
		{`{"previous_response_id" : null}`, `{"previous_response_id" : "resp_a"}`},
		{`{"response":{"previous_response_id":null},"previous_response_id":null}`, `{"response":{"previous_response_id":"resp_a"},"previous_response_id":"resp_a"}`},
		{`{"text":"\"previous_response_id\":null"}`, `{"text":"\"previous_response_id\":null"}`},
		{`{"previous_response_id":"resp_b"}`, `{"previous_response_id":"resp_b"}`},
		{`{"previous_response_id"}`, `{"previous_response_id"}`},
	} {
		if got := string(setMember([]byte(c.in), "previous_response_id", "null", `"resp_a"`)); got != c.want {
			t.Errorf("setMember(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestResponsesBadInput: a malformed Responses request is refused in
// OpenAI's shape, naming the problem, and reaches no engine.
func TestResponsesBadInput(t *testing.T) {
	e := newRespEngine(t)
	h := newHarnessWith(t, func(d *testDeps, _ *scheduler.Config) { d.Options.MaxBodyBytes = 1 << 10 }, e.addr)
	for _, c := range []struct {
		name, body string
		status     int
		says       string
	}{
		{"bad JSON", `{"model":"m","input":`, 400, "JSON"},
		{"missing model", `{"input":"hi"}`, 400, "model"},
		{"unknown model", `{"model":"nope","input":"hi"}`, 404, "nope"},
		{"unknown item type", `{"model":"m","input":[{"type":"telepathy","text":"x"}]}`, 400, "telepathy"},
		{"input not a list", `{"model":"m","input":{"type":"message"}}`, 400, "input"},
		{"oversize body", `{"model":"m","input":"` + strings.Repeat("x", 2<<10) + `"}`, 413, "limit"},
		{"background", `{"model":"m","input":"hi","background":true}`, 400, "background"},
		{"an id no router made", `{"model":"m","input":"hi","previous_response_id":"resp_nope"}`, 404, "resp_nope"},
	} {
		code, b := respCall(t, http.MethodPost, h.srv.URL+"/v1/responses", "", c.body)
		if code != c.status {
			t.Errorf("%s: %d %s; want %d", c.name, code, b, c.status)
			continue
		}
		if msg := openAIError(t, b).Message; !strings.Contains(msg, c.says) {
			t.Errorf("%s: %q does not name %q", c.name, msg, c.says)
		}
	}
	if n := len(e.requests()); n != 0 {
		t.Fatalf("refused requests reached the engine %d times", n)
	}
}
