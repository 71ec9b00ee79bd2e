package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// storeCap bounds the simulator's response store. vLLM's in-memory store
// (VLLM_ENABLE_RESPONSES_API_STORE=1) never forgets a response and warns
// of the leak; a simulator that runs for days in a test fleet keeps only
// the newest storeCap responses and forgets the oldest first.
const storeCap = 1024

// responseStore is vLLM's response_store and msg_store: the answers of
// requests with store true and the chat messages they rendered, which a
// request naming one as previous_response_id continues. Disabled, as vLLM
// is by default, it keeps nothing and every lookup fails.
type responseStore struct {
	enabled bool
	mu      sync.Mutex
	entries map[string]*storedResponse
	order   []string // ids, oldest first
}

type storedResponse struct {
	obj    *responseObject
	msgs   []json.RawMessage
	cancel context.CancelFunc // a background request's; nil otherwise
}

func newResponseStore(enabled bool) *responseStore {
	return &responseStore{enabled: enabled, entries: map[string]*storedResponse{}}
}

// entry returns id's entry, creating it (and forgetting the oldest past
// storeCap) when absent. The caller holds mu.
func (st *responseStore) entry(id string) *storedResponse {
	if e, ok := st.entries[id]; ok {
		return e
	}
	e := &storedResponse{}
	st.entries[id] = e
	st.order = append(st.order, id)
	for len(st.order) > storeCap {
		delete(st.entries, st.order[0])
		st.order = st.order[1:]
	}
	return e
}

// putMessages keeps c's messages when c is stored, as vLLM does when it
// schedules the request.
func (st *responseStore) putMessages(c *responsesCall) {
	if !c.req.Store {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.entry(c.id).msgs = c.msgs
}

// complete keeps c's answer when c is stored, unless it was cancelled
// meanwhile; it returns the answer the store holds.
func (st *responseStore) complete(c *responsesCall, obj *responseObject) *responseObject {
	if !c.req.Store {
		return obj
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.entry(c.id)
	if e.obj == nil || e.obj.Status != "cancelled" {
		e.obj = obj
	}
	return e.obj
}

// get returns a stored response with its messages.
func (st *responseStore) get(id string) (storedResponse, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.entries[id]
	if !ok || e.obj == nil {
		return storedResponse{}, false
	}
	obj := *e.obj
	return storedResponse{obj: &obj, msgs: e.msgs}, true
}

// startBackground answers a background request at once with its queued
// response and generates it after, as vLLM's background mode does; the
// stored response turns completed, incomplete or failed when it ends.
func (s *Server) startBackground(w http.ResponseWriter, c *responsesCall) {
	ctx, cancel := context.WithCancel(context.Background())
	queued := s.responseObject(c, 0, nil, "")
	s.store.mu.Lock()
	e := s.store.entry(c.id)
	e.obj, e.msgs, e.cancel = queued, c.msgs, cancel
	s.store.mu.Unlock()
	go func() {
		defer cancel()
		g, err := s.generate(ctx, c)
		if err == nil {
			var res result
			if res, err = g.wait(); err == nil {
				var text string
				if text, err = s.tok.Decode(res.ids, true); err == nil {
					s.store.complete(c, s.responseObject(c, g.prompt, &res, text))
					return
				}
			}
		}
		s.store.mu.Lock()
		if e := s.store.entry(c.id); e.obj != nil && e.obj.Status != "completed" && e.obj.Status != "cancelled" {
			failed := *e.obj
			failed.Status = "failed"
			e.obj = &failed
		}
		s.store.mu.Unlock()
	}()
	writeJSON(w, http.StatusOK, queued)
}

// getResponse serves GET /v1/responses/{id}: the stored response, or 404.
// With stream=true vLLM replays a background stream's events; the
// simulator keeps none, and vLLM answers a response without them as here.
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	prev, ok := s.store.get(id)
	if !ok {
		writeError(w, notFoundResponse(id))
		return
	}
	if r.URL.Query().Get("stream") == "true" {
		writeError(w, &apiError{status: http.StatusBadRequest, typ: "BadRequestError", param: "response_id", msg: fmt.Sprintf("Unknown response_id: %s", id)})
		return
	}
	writeJSON(w, http.StatusOK, prev.obj)
}

// cancelResponse serves POST /v1/responses/{id}/cancel: a queued or
// in-progress response turns cancelled and its generation is aborted;
// any other is refused, with vLLM's words.
func (s *Server) cancelResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.store.mu.Lock()
	e, ok := s.store.entries[id]
	if !ok || e.obj == nil {
		s.store.mu.Unlock()
		writeError(w, notFoundResponse(id))
		return
	}
	if e.obj.Status != "queued" && e.obj.Status != "in_progress" {
		s.store.mu.Unlock()
		writeError(w, invalidRequest(http.StatusBadRequest, "response_id", "Cannot cancel a synchronous response."))
		return
	}
	cancelled := *e.obj
	cancelled.Status = "cancelled"
	e.obj = &cancelled
	cancel := e.cancel
	s.store.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	writeJSON(w, http.StatusOK, &cancelled)
}

// withHistory puts a stored response's conversation before chatBody's
// messages, as vLLM's construct_input_messages does for a
// previous_response_id: the new instructions (when given, chatBody's first
// message), the stored messages but their system ones (instructions do not
// carry over), each text part of the stored answer as an assistant
// message, then the new input.
func withHistory(chatBody []byte, hasInstructions bool, prev storedResponse) ([]byte, error) {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(chatBody, &body); err != nil {
		return nil, err
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(body["messages"], &msgs); err != nil {
		return nil, err
	}
	var out []json.RawMessage
	if hasInstructions {
		out, msgs = append(out, msgs[0]), msgs[1:]
	}
	for _, m := range prev.msgs {
		var role struct{ Role string }
		if json.Unmarshal(m, &role) == nil && role.Role == "system" {
			continue
		}
		out = append(out, m)
	}
	for _, o := range prev.obj.Output {
		for _, part := range o.Content {
			b, _ := json.Marshal(map[string]string{"role": "assistant", "content": part.Text})
			out = append(out, b)
		}
	}
	out = append(out, msgs...)
	joined, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	body["messages"] = joined
	return json.Marshal(body)
}
