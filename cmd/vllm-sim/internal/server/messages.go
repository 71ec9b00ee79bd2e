package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/llmgw/llmgw/router/anthropic"
)

// Anthropic's Messages API, served as vLLM's bridge serves it
// (vllm/entrypoints/anthropic/serving.py and api_router.py): the request
// is converted to a chat completion (router/anthropic builds the same
// body), run through the chat path, and the chat answer or stream is
// converted back. So the prompt the engine caches is the chat rendering
// the router keys.

// messages serves POST /v1/messages.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		writeError(w, badRequest("reading the request body: %v", err))
		return
	}
	req, err := anthropic.Parse(body)
	if err != nil {
		writeError(w, validationError(err))
		return
	}
	chat, err := req.ChatBody()
	if err != nil {
		writeMessagesError(w, badRequest("%s", strings.TrimPrefix(err.Error(), "invalid request: ")))
		return
	}
	cr := r.Clone(r.Context())
	cr.Body, cr.ContentLength = io.NopCloser(bytes.NewReader(chat)), int64(len(chat))
	mw := &messageWriter{w: w}
	s.chat(mw, cr)
	mw.finish()
}

// countTokens serves POST /v1/messages/count_tokens: the number of prompt
// tokens the converted chat request renders to.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		writeError(w, badRequest("reading the request body: %v", err))
		return
	}
	model, chat, err := anthropic.ParseCountTokens(body)
	if err != nil {
		writeError(w, validationError(err))
		return
	}
	var req chatRequest
	if err := json.Unmarshal(chat, &req); err != nil {
		writeMessagesError(w, badRequest("%v", err))
		return
	}
	if err := s.checkModel(model); err != nil {
		writeMessagesError(w, err)
		return
	}
	ids, perr := s.renderChat(chat, req.Messages, req.AddGenerationPrompt, req.ContinueFinalMessage, req.AddSpecialTokens)
	if perr != nil {
		writeMessagesError(w, perr)
		return
	}
	type contextManagement struct {
		OriginalInputTokens int `json:"original_input_tokens"`
	}
	writeJSON(w, http.StatusOK, struct {
		InputTokens       int               `json:"input_tokens"`
		ContextManagement contextManagement `json:"context_management"`
	}{len(ids), contextManagement{len(ids)}})
}

// validationError is a body the request model refuses: vLLM's app-wide
// validation handler answers it, in OpenAI's shape, before the Anthropic
// router runs.
func validationError(err error) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: http.StatusText(http.StatusBadRequest), msg: err.Error()}
}

// writeMessagesError writes an error as vLLM's Anthropic router translates
// one: {"type": "error", "error": {"type", "message"}}, the type being the
// OpenAI error's, the status its code.
func writeMessagesError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		// vLLM's router names an exception it caught "internal_error".
		ae = &apiError{status: http.StatusInternalServerError, typ: "internal_error", msg: err.Error()}
	}
	writeJSONPlain(w, ae.status, messagesError{Type: "error", Error: messagesErrorInfo{Type: ae.typ, Message: ae.msg}})
}

type messagesError struct {
	Type  string            `json:"type"`
	Error messagesErrorInfo `json:"error"`
}

type messagesErrorInfo struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// messageWriter stands between the chat path and the client: a streamed
// chat answer is converted event by event as it comes; a JSON answer or an
// error is held and converted by finish.
type messageWriter struct {
	w      http.ResponseWriter
	status int
	conv   *streamConverter // set once a streamed answer has begun
	buf    bytes.Buffer
}

func (m *messageWriter) Header() http.Header { return m.w.Header() }

func (m *messageWriter) WriteHeader(status int) {
	if m.status != 0 {
		return
	}
	m.status = status
	if status == http.StatusOK && strings.HasPrefix(m.w.Header().Get("Content-Type"), "text/event-stream") {
		m.w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		m.w.WriteHeader(status)
		m.conv = &streamConverter{}
		m.Flush()
	}
}

func (m *messageWriter) Write(p []byte) (int, error) {
	m.WriteHeader(http.StatusOK)
	m.buf.Write(p)
	if m.conv == nil {
		return len(p), nil
	}
	for {
		event, _, ok := bytes.Cut(m.buf.Bytes(), []byte("\n\n"))
		if !ok {
			return len(p), nil
		}
		for _, line := range strings.Split(string(event), "\n") {
			if data, isData := strings.CutPrefix(line, "data:"); isData {
				if _, err := io.WriteString(m.w, m.conv.convert(strings.TrimSpace(data))); err != nil {
					return 0, err
				}
			}
		}
		m.buf.Next(len(event) + 2) // the event and its blank line
	}
}

func (m *messageWriter) Flush() {
	if f, ok := m.w.(http.Flusher); ok && m.conv != nil {
		f.Flush()
	}
}

// finish converts a held answer: a chat completion into a message, an
// OpenAI-shaped error into an Anthropic-shaped one.
func (m *messageWriter) finish() {
	if m.conv != nil || m.status == 0 {
		return
	}
	if m.status != http.StatusOK {
		var e errorBody
		if json.Unmarshal(m.buf.Bytes(), &e) != nil {
			m.w.WriteHeader(m.status)
			_, _ = m.w.Write(m.buf.Bytes())
			return
		}
		writeMessagesError(m.w, &apiError{status: m.status, typ: e.Error.Type, msg: e.Error.Message})
		return
	}
	var c chatAnswer
	if err := json.Unmarshal(m.buf.Bytes(), &c); err != nil || len(c.Choices) == 0 {
		writeMessagesError(m.w, errors.New("the chat answer could not be read"))
		return
	}
	writeJSONPlain(m.w, http.StatusOK, messageOf(c))
}
