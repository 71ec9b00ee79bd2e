package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzAgentAPIs: whatever a client sends to /v1/responses or
// /v1/messages, the router answers it or refuses it in that API's own
// error shape, and never with a panic.
func FuzzAgentAPIs(f *testing.F) {
	f.Add(true, []byte(`{"model":"m","input":"hi"}`))
	f.Add(true, []byte(`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":"x"}],"previous_response_id":"resp_x"}`))
	f.Add(false, []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`))
	f.Add(false, []byte(`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[]}`))
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) }))
	defer ok.Close()
	h := newHarness(f, 1<<16, ok.Listener.Addr().String())
	f.Fuzz(func(t *testing.T, responses bool, body []byte) {
		path := "/v1/messages"
		if responses {
			path = "/v1/responses"
		}
		rec := httptest.NewRecorder()
		// A cancellable context, as a server's requests have: the proxy
		// then never asks the recorder for a CloseNotifier.
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body))).WithContext(t.Context())
		h.gw.Handler().ServeHTTP(rec, req)
		if rec.Code == http.StatusOK {
			return
		}
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message string
			} `json:"error"`
		}
		err := json.Unmarshal(rec.Body.Bytes(), &e)
		switch {
		case err != nil || e.Error.Message == "":
			t.Fatalf("%s: status %d with a body that is no error: %q", path, rec.Code, rec.Body.String())
		case !responses && (e.Type != "error" || e.Error.Type == ""):
			t.Fatalf("%s: status %d not in Anthropic's shape: %q", path, rec.Code, rec.Body.String())
		case responses && e.Type != "":
			t.Fatalf("%s: status %d not in OpenAI's shape: %q", path, rec.Code, rec.Body.String())
		}
	})
}
