package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llmgw/llmgw/router/responses"
)

func storedCall(t *testing.T, id string) *responsesCall {
	t.Helper()
	req, err := responses.Parse([]byte(`{"model":"m","input":"q"}`))
	if err != nil {
		t.Fatal(err)
	}
	return &responsesCall{req: req, id: id, msgs: []json.RawMessage{json.RawMessage(`{"role":"user","content":"q"}`)}}
}

// TestStoreForgetsTheOldestPastItsCap checks the bound vLLM's store lacks.
func TestStoreForgetsTheOldestPastItsCap(t *testing.T) {
	t.Parallel()
	st := newResponseStore(true)
	for i := range storeCap + 2 {
		c := storedCall(t, requestID("resp", uint64(i)))
		st.putMessages(c)
		st.complete(c, &responseObject{ID: c.id, Status: "completed"})
	}
	if len(st.entries) != storeCap || len(st.order) != storeCap {
		t.Fatalf("store holds %d entries (%d ids); want the cap, %d", len(st.entries), len(st.order), storeCap)
	}
	for i, want := range map[uint64]bool{0: false, 1: false, 2: true, storeCap + 1: true} {
		if _, ok := st.get(requestID("resp", i)); ok != want {
			t.Errorf("response %d stored: %v, want %v", i, ok, want)
		}
	}
}

func TestCancelAbortsAQueuedResponse(t *testing.T) {
	t.Parallel()
	s := &Server{store: newResponseStore(true)}
	aborted := false
	s.store.entries["resp_q"] = &storedResponse{obj: &responseObject{ID: "resp_q", Status: "queued"}, cancel: func() { aborted = true }}
	s.store.order = []string{"resp_q"}
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/v1/responses/resp_q/cancel", nil)
	r.SetPathValue("id", "resp_q")
	s.cancelResponse(w, r)
	var got responseObject
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusOK || got.Status != "cancelled" || !aborted {
		t.Fatalf("cancel: %d %s (aborted %v); want 200 with status cancelled and the generation aborted", w.Code, w.Body, aborted)
	}
	c := storedCall(t, "resp_q")
	c.req.Store = true
	if kept := s.store.complete(c, &responseObject{ID: "resp_q", Status: "completed"}); kept.Status != "cancelled" {
		t.Errorf("a finished generation overwrote the cancellation: %s", kept.Status)
	}
}
