package gateway

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// maxErrorBody is the most of an error answer the dialect writer holds
// to rewrite; a longer one passes through as it is.
const maxErrorBody = 64 << 10

// errorDialect rewrites the error answers a handler writes in OpenAI's
// shape into another API's (Anthropic's on /v1/messages), so that every
// refusal the router makes (keys, limits, body size, no replica, a bad
// request) reaches an Anthropic client in the shape its SDK parses,
// without each refusal knowing which API it answers. An engine's answer
// that is already in the API's shape passes through unchanged.
func errorDialect(render func(status int, message string) []byte) gin.HandlerFunc {
	return func(c *gin.Context) {
		w := &dialectWriter{ResponseWriter: c.Writer, render: render}
		c.Writer = w
		c.Next()
		w.finish() // after a panic, recovery calls it once it has answered
	}
}

// dialectWriter holds an error answer until the handler is done, then
// writes it rewritten. Success answers (and streams) pass straight
// through.
type dialectWriter struct {
	gin.ResponseWriter
	render  func(int, string) []byte
	decided bool // whether this answer is held
	held    bool
	buf     []byte
}

func (w *dialectWriter) decide() {
	if w.decided {
		return
	}
	w.decided = true
	st := w.ResponseWriter.Status()
	w.held = st >= http.StatusBadRequest && strings.HasPrefix(w.Header().Get("Content-Type"), "application/json")
	if w.held {
		w.Header().Del("Content-Length") // the rewritten body's length differs
	}
}

func (w *dialectWriter) Write(p []byte) (int, error) {
	w.decide()
	if w.held {
		if len(w.buf)+len(p) <= maxErrorBody {
			w.buf = append(w.buf, p...)
			return len(p), nil
		}
		w.held = false // too long to be one of ours: pass it on as it is
		if _, err := w.ResponseWriter.Write(w.buf); err != nil {
			return 0, err
		}
		w.buf = nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *dialectWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// Flush passes a stream's events on at once; a held error has none.
func (w *dialectWriter) Flush() {
	w.decide()
	if !w.held {
		w.ResponseWriter.Flush()
	}
}

func (w *dialectWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes a held answer, rewritten when it is an OpenAI-shaped
// error.
func (w *dialectWriter) finish() {
	if !w.held {
		return
	}
	w.held = false
	body := w.buf
	var oa struct {
		Type  *string `json:"type"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &oa) == nil && oa.Type == nil && oa.Error != nil {
		body = w.render(w.ResponseWriter.Status(), oa.Error.Message)
	}
	_, _ = w.ResponseWriter.Write(body)
}
