package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/responses"
)

// responseJSON is the part of vLLM's ResponsesResponse these tests read.
type responseJSON struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Status            string `json:"status"`
	Model             string `json:"model"`
	MaxOutputTokens   int    `json:"max_output_tokens"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *struct {
		InputTokens        int `json:"input_tokens"`
		OutputTokens       int `json:"output_tokens"`
		TotalTokens        int `json:"total_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails struct {
			ReasoningTokens *int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
	Error *errorJSON `json:"error"`
}

type errorJSON struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    int    `json:"code"`
}

func (r responseJSON) text() string {
	if len(r.Output) == 0 || len(r.Output[0].Content) == 0 {
		return ""
	}
	return r.Output[0].Content[0].Text
}

// TestResponsesKeyLikeChat checks that a Responses request caches the
// tokens of its chat rendering (router/responses.ChatBody): the chat
// completion of that body finds every full block of its prompt cached.
func TestResponsesKeyLikeChat(t *testing.T) {
	p := startSim(t, nil, "--block-size", "16", "--enable-prompt-tokens-details")
	body := `{"model":"sim-model","instructions":"be brief","input":[{"role":"user","content":` + quote(words(0, 80)) + `},` +
		`{"type":"function_call","call_id":"c1","name":"lookup","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"found"}],` +
		`"tools":[{"type":"function","name":"lookup","parameters":{"type":"object"}}],"max_output_tokens":4,"request_id":"resp_fixed"}`
	var r responseJSON
	if st := post(t, p.URL+"/v1/responses", body, &r); st != http.StatusOK || r.Usage == nil {
		t.Fatalf("status %d, answer %+v", st, r)
	}
	if r.ID != "resp_fixed" || r.Object != "response" || r.Model != "sim-model" || r.Output[0].Type != "message" || r.Output[0].Role != "assistant" {
		t.Errorf("answer %+v; want vLLM's shape with the request_id as its id", r)
	}
	if u := r.Usage; u.OutputTokens < 1 || u.OutputTokens > 4 || u.TotalTokens != u.InputTokens+u.OutputTokens || u.OutputTokensDetails.ReasoningTokens == nil {
		t.Errorf("usage %+v", u)
	}
	req, err := responses.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	chat, err := req.ChatBody()
	if err != nil {
		t.Fatal(err)
	}
	var c completion
	if st := post(t, p.URL+"/v1/chat/completions", string(chat), &c); st != http.StatusOK {
		t.Fatalf("chat status %d: %+v", st, c.Error)
	}
	full := (r.Usage.InputTokens - 1) / 16 * 16
	if c.Usage.PromptTokens != r.Usage.InputTokens || c.Usage.PromptTokensDetails.CachedTokens != full || full < 80 {
		t.Errorf("chat prompt %d tokens, %d cached; want the response's %d, %d cached",
			c.Usage.PromptTokens, c.Usage.PromptTokensDetails.CachedTokens, r.Usage.InputTokens, full)
	}
}

// sseEvent is one server-sent event: its event: line and its data.
type sseEvent struct {
	name string
	data map[string]any
}

func readEvents(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	var out []sseEvent
	var name string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
			out = append(out, sseEvent{name, d})
			name = ""
		case line != "":
			t.Fatalf("unexpected line %q", line)
		}
	}
	return out
}

func TestResponsesStreamEvents(t *testing.T) {
	p := startSim(t, nil)
	body := `{"model":"sim-model","input":"hello","stream":true,"max_output_tokens":6,"ignore_eos":true}`
	resp, err := http.Post(p.URL+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content type %q", ct)
	}
	events := readEvents(t, resp)
	var types []string
	var deltas string
	for i, e := range events {
		typ, _ := e.data["type"].(string)
		if e.name != typ {
			t.Errorf("event %d: event line %q, data type %q", i, e.name, typ)
		}
		if seq, _ := e.data["sequence_number"].(float64); int(seq) != i {
			t.Errorf("event %d (%s) has sequence_number %v", i, typ, e.data["sequence_number"])
		}
		if typ == "response.output_text.delta" {
			deltas += e.data["delta"].(string)
			if len(types) > 0 && types[len(types)-1] == typ {
				continue
			}
		}
		types = append(types, typ)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if strings.Join(types, " ") != strings.Join(want, " ") {
		t.Fatalf("events %v; want %v", types, want)
	}
	done := events[len(events)-4].data
	last := events[len(events)-1].data["response"].(map[string]any)
	raw, _ := json.Marshal(events[len(events)-1].data)
	res, final, err := responses.ReadStreamEvent(raw)
	if err != nil || !final || deltas == "" || done["text"] != deltas || res.Status != "incomplete" || res.OutputTokens != 6 {
		t.Fatalf("deltas %q, done %q, final %+v (%v, %v)", deltas, done["text"], res, final, err)
	}
	if last["incomplete_details"].(map[string]any)["reason"] != "max_output_tokens" {
		t.Errorf("incomplete_details %v", last["incomplete_details"])
	}
}

func getJSON(t *testing.T, method, url string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}

// TestResponsesWithoutStore checks vLLM's default: store is ignored, so no
// response can be fetched, continued or cancelled, and background is
// refused.
func TestResponsesWithoutStore(t *testing.T) {
	p := startSim(t, nil)
	var r responseJSON
	if st := post(t, p.URL+"/v1/responses", `{"model":"sim-model","input":"hi","store":true,"request_id":"resp_a","max_output_tokens":2}`, &r); st != http.StatusOK {
		t.Fatalf("status %d", st)
	}
	notFound := errorJSON{Message: "Response with id 'resp_a' not found.", Type: "invalid_request_error", Param: "response_id", Code: 404}
	for _, c := range []struct{ method, path string }{{"GET", "/v1/responses/resp_a"}, {"POST", "/v1/responses/resp_a/cancel"}} {
		var e responseJSON
		if st := getJSON(t, c.method, p.URL+c.path, &e); st != http.StatusNotFound || e.Error == nil || *e.Error != notFound {
			t.Errorf("%s %s: %d %+v; want 404 %+v", c.method, c.path, st, e.Error, notFound)
		}
	}
	var e responseJSON
	if st := post(t, p.URL+"/v1/responses", `{"model":"sim-model","input":"more","previous_response_id":"resp_a"}`, &e); st != http.StatusNotFound || e.Error == nil || *e.Error != notFound {
		t.Errorf("previous_response_id: %d %+v; want 404 %+v", st, e.Error, notFound)
	}
	if st := post(t, p.URL+"/v1/responses", `{"model":"sim-model","input":"hi","background":true}`, &e); st != http.StatusBadRequest ||
		e.Error == nil || e.Error.Param != "background" || !strings.Contains(e.Error.Message, "VLLM_ENABLE_RESPONSES_API_STORE=1") {
		t.Errorf("background: %d %+v; want 400 naming the switch", st, e.Error)
	}
}

func TestResponsesStore(t *testing.T) {
	p := startSim(t, []string{"VLLM_ENABLE_RESPONSES_API_STORE=1"}, "--block-size", "16")
	var first responseJSON
	body := `{"model":"sim-model","input":` + quote(words(0, 60)) + `,"request_id":"resp_1","max_output_tokens":3}`
	if st := post(t, p.URL+"/v1/responses", body, &first); st != http.StatusOK || first.Usage == nil {
		t.Fatalf("status %d %+v", st, first.Error)
	}
	var got responseJSON
	if st := getJSON(t, "GET", p.URL+"/v1/responses/resp_1", &got); st != http.StatusOK || got.ID != "resp_1" || got.text() != first.text() {
		t.Errorf("GET: %d %+v; want the stored answer", st, got)
	}
	var e responseJSON
	if st := getJSON(t, "POST", p.URL+"/v1/responses/resp_1/cancel", &e); st != http.StatusBadRequest || e.Error == nil || e.Error.Message != "Cannot cancel a synchronous response." {
		t.Errorf("cancel: %d %+v", st, e.Error)
	}
	var next responseJSON
	if st := post(t, p.URL+"/v1/responses", `{"model":"sim-model","input":"and then?","previous_response_id":"resp_1","max_output_tokens":2}`, &next); st != http.StatusOK || next.Usage == nil {
		t.Fatalf("continuing: %d %+v", st, next.Error)
	}
	if next.Usage.InputTokens <= first.Usage.InputTokens || next.Usage.InputTokensDetails.CachedTokens < (first.Usage.InputTokens-1)/16*16 {
		t.Errorf("continuation: %d input tokens, %d cached; want more than %d with the first prompt's blocks cached",
			next.Usage.InputTokens, next.Usage.InputTokensDetails.CachedTokens, first.Usage.InputTokens)
	}
	if st := post(t, p.URL+"/v1/responses", `{"model":"sim-model","input":"hi","store":false,"request_id":"resp_nostore"}`, &e); st != http.StatusOK {
		t.Fatalf("store false: %d", st)
	}
	if st := getJSON(t, "GET", p.URL+"/v1/responses/resp_nostore", &e); st != http.StatusNotFound {
		t.Errorf("GET of a store=false response: %d; want 404", st)
	}
	var queued responseJSON
	if st := post(t, p.URL+"/v1/responses", `{"model":"sim-model","input":"bg","background":true,"request_id":"resp_bg","max_output_tokens":2}`, &queued); st != http.StatusOK || queued.Status != "queued" {
		t.Fatalf("background: %d %+v", st, queued)
	}
	if !poll.Within(30*time.Second, func() bool {
		var r responseJSON
		return getJSON(t, "GET", p.URL+"/v1/responses/resp_bg", &r) == http.StatusOK && r.Status != "queued" && r.Usage != nil
	}) {
		t.Error("the background response never finished")
	}
}

func TestResponsesBadRequests(t *testing.T) {
	p := startSim(t, nil, "--max-model-len", "256")
	cases := []struct {
		body   string
		status int
		typ    string
		has    string
	}{
		{`{"model":"sim-model","input":[{"type":"web_search_call","id":"w"}]}`, 400, "BadRequestError", `input[0].type: item type "web_search_call" is not supported`},
		{`{"model":"sim-model"}`, 400, "BadRequestError", "input is required"},
		{`{"model":"nope","input":"hi"}`, 404, "NotFoundError", "The model `nope` does not exist."},
		{`{"model":"sim-model","input":"hi","max_output_tokens":0}`, 400, "BadRequestError", "max_tokens must be at least 1"},
		{`{"model":"sim-model","input":` + quote(words(0, 300)) + `}`, 400, "invalid_request_error", "exceeds the max_model_len"},
	}
	for _, c := range cases {
		var e responseJSON
		if st := post(t, p.URL+"/v1/responses", c.body, &e); st != c.status || e.Error == nil || e.Error.Type != c.typ || !strings.Contains(e.Error.Message, c.has) {
			t.Errorf("%.60s: %d %+v; want %d %s %q", c.body, st, e.Error, c.status, c.typ, c.has)
		}
	}
}

// TestResponsesWithQwenTemplate is TestResponsesKeyLikeChat through a real
// chat template (Qwen3's, from `make testdata`): a tool round trip with
// reasoning renders, and caches, the tokens of its chat body.
func TestResponsesWithQwenTemplate(t *testing.T) {
	dir := os.Getenv("LLMGW_TESTDATA") + "/models/qwen3"
	if _, err := os.Stat(dir + "/tokenizer.json"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Qwen3 tokenizer files missing in CI (make testdata): %v", err)
		}
		t.Skipf("Qwen3 tokenizer files not present (run make testdata): %v", err)
	}
	p := startSim(t, nil, "--tokenizer", dir, "--block-size", "16", "--enable-prompt-tokens-details")
	body := `{"model":"sim-model","instructions":"You answer with the weather.","input":[` +
		`{"role":"user","content":[{"type":"input_text","text":"What is the weather in Paris today, and should I take an umbrella?"}]},` +
		`{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"I need the forecast."}]},` +
		`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\": \"Paris\"}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"18C, light rain in the afternoon"}],` +
		`"tools":[{"type":"function","name":"get_weather","description":"Weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}],` +
		`"max_output_tokens":3}`
	var r responseJSON
	if st := post(t, p.URL+"/v1/responses", body, &r); st != http.StatusOK || r.Usage == nil {
		t.Fatalf("status %d: %+v", st, r.Error)
	}
	req, err := responses.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	chat, err := req.ChatBody()
	if err != nil {
		t.Fatal(err)
	}
	var c completion
	if st := post(t, p.URL+"/v1/chat/completions", string(chat), &c); st != http.StatusOK {
		t.Fatalf("chat status %d: %+v", st, c.Error)
	}
	full := (r.Usage.InputTokens - 1) / 16 * 16
	if c.Usage.PromptTokens != r.Usage.InputTokens || c.Usage.PromptTokensDetails.CachedTokens != full || full < 64 {
		t.Errorf("chat prompt %d tokens, %d cached; want the response's %d, %d cached",
			c.Usage.PromptTokens, c.Usage.PromptTokensDetails.CachedTokens, r.Usage.InputTokens, full)
	}
}

// TestResponsesCacheSalt checks that a salted request caches apart from
// an unsalted one, and that vLLM's Responses validation (a non-empty
// string) is the only rule: a '/' that chat refuses is accepted.
func TestResponsesCacheSalt(t *testing.T) {
	p := startSim(t, nil, "--block-size", "16")
	input := quote(words(0, 60))
	send := func(salt string) responseJSON {
		t.Helper()
		var r responseJSON
		body := `{"model":"sim-model","input":` + input + `,"max_output_tokens":1` + salt + `}`
		if st := post(t, p.URL+"/v1/responses", body, &r); st != http.StatusOK || r.Usage == nil {
			t.Fatalf("status %d: %+v", st, r.Error)
		}
		return r
	}
	send("")
	if r := send(`,"cache_salt":"tenant/a"`); r.Usage.InputTokensDetails.CachedTokens != 0 {
		t.Errorf("a salted request found %d cached tokens of an unsalted one", r.Usage.InputTokensDetails.CachedTokens)
	}
	if r := send(`,"cache_salt":"tenant/a"`); r.Usage.InputTokensDetails.CachedTokens == 0 {
		t.Error("the same salt found nothing cached")
	}
	var e responseJSON
	if st := post(t, p.URL+"/v1/responses", `{"model":"sim-model","input":"x","cache_salt":""}`, &e); st != http.StatusBadRequest || e.Error == nil || !strings.Contains(e.Error.Message, "cache_salt") {
		t.Errorf("empty salt: %d %+v", st, e.Error)
	}
}
