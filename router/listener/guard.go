package listener

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/router/openai"
)

// Guard wraps h with the per-request bounds of l: more than MaxHeaders
// header fields is answered 431; the body must be read within
// BodyTimeout; each write must complete within WriteTimeout.
func Guard(h http.Handler, l Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.MaxHeaders > 0 {
			if n := headerFields(r.Header); n > l.MaxHeaders {
				w.Header().Set("Connection", "close")
				openai.WriteError(w, http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("request has %d header fields; at most %d are accepted", n, l.MaxHeaders))
				return
			}
		}
		rc := http.NewResponseController(w)
		if l.BodyTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
			if rc.SetReadDeadline(time.Now().Add(l.BodyTimeout)) == nil {
				// A shallow copy: net/http looks at its own Request's Body
				// after the handler to decide whether to drain what is left
				// (up to 256 KiB) or close the connection.
				r = r.WithContext(r.Context())
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, timeout: l.BodyTimeout}
			}
		}
		if l.WriteTimeout > 0 {
			// A deadline left by the previous request on this connection
			// must not cut this one while it waits for its replica.
			if rc.SetWriteDeadline(time.Time{}) == nil {
				dw := &deadlineWriter{ResponseWriter: w, rc: rc, timeout: l.WriteTimeout}
				defer dw.arm() // the last flush happens after the handler returns
				w = dw
			}
		}
		h.ServeHTTP(w, r)
	})
}

func headerFields(h http.Header) int {
	n := 0
	for _, v := range h {
		n += len(v)
	}
	return n
}

// BodyTimeoutError is what reading a body returns once BodyTimeout has
// passed; it unwraps to the connection's deadline error
// (os.ErrDeadlineExceeded).
type BodyTimeoutError struct {
	Timeout time.Duration
	Err     error
}

func (e *BodyTimeoutError) Error() string {
	return fmt.Sprintf("request body not received within %s", e.Timeout)
}

func (e *BodyTimeoutError) Unwrap() error { return e.Err }

// deadlineBody lifts the read deadline once the body is read: the server
// then reads the connection in the background to notice a client that
// leaves, and a deadline passing there would cancel a stream.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	done    bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		b.lift()
	case err != nil && isTimeout(err):
		err = &BodyTimeoutError{Timeout: b.timeout, Err: err}
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	b.lift()
	return b.ReadCloser.Close()
}

func (b *deadlineBody) lift() {
	if !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// deadlineWriter gives every write its own deadline, so a stream may run
// for hours while each piece of it must leave within the timeout.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *deadlineWriter) arm() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) }

func (w *deadlineWriter) WriteHeader(code int) {
	w.arm()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(p)
}

// Flush sends what is buffered, within the deadline (gin and the reverse
// proxy flush every SSE event).
func (w *deadlineWriter) Flush() {
	w.arm()
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
