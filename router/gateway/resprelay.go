package gateway

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/llmgw/router/responses"
)

// responseRelay passes a Responses answer to the client with the fields
// the router changed on the way to the engine put back as the client
// sent them (previous_response_id, store: the engine was sent a
// stateless request), and reads the response object out of it for the
// conversation store: the whole JSON body of a plain answer, or the final
// response event of a stream. A stream is relayed event by event, so it
// costs one event's memory; anything over limit (an event or a body) is
// passed on as it came and not kept.
type responseRelay struct {
	gin.ResponseWriter
	limit int
	// prev and store are the client's previous_response_id ("" for none)
	// and store.
	prev  string
	store bool

	decided, pass, stream bool
	buf                   []byte // the JSON body, or the stream's unfinished event
	res                   *responses.Result
}

func newResponseRelay(w gin.ResponseWriter, limit int, prev string, store bool) *responseRelay {
	return &responseRelay{ResponseWriter: w, limit: limit, prev: prev, store: store}
}

// decide reads the answer's status and type once its headers are set:
// at the first write or flush (the proxy flushes the headers before the
// body when a replica is slow to send it).
func (r *responseRelay) decide() {
	if r.decided {
		return
	}
	r.decided = true
	r.pass = r.ResponseWriter.Status() != http.StatusOK
	r.stream = strings.HasPrefix(r.Header().Get("Content-Type"), "text/event-stream")
	if !r.pass && !r.stream {
		r.Header().Del("Content-Length") // the restored fields change it
	}
}

func (r *responseRelay) Write(p []byte) (int, error) {
	r.decide()
	if r.pass {
		return r.ResponseWriter.Write(p)
	}
	n := len(p)
	if !r.stream {
		return n, r.hold(p)
	}
	for len(p) > 0 && !r.pass {
		i := bytes.Index(p, []byte("\n\n"))
		if i < 0 {
			return n, r.hold(p)
		}
		if err := r.hold(p[:i+2]); err != nil || r.pass {
			return n, err
		}
		ev := r.event(r.buf)
		r.buf = r.buf[:0]
		if _, err := r.ResponseWriter.Write(ev); err != nil {
			return n, err
		}
		p = p[i+2:]
	}
	if len(p) > 0 {
		_, err := r.ResponseWriter.Write(p)
		return n, err
	}
	return n, nil
}

// hold keeps p until its event or body is whole; over the limit, what is
// held and p go on as they are, and nothing more is read.
func (r *responseRelay) hold(p []byte) error {
	if len(r.buf)+len(p) <= r.limit {
		r.buf = append(r.buf, p...)
		return nil
	}
	r.pass = true
	held := append(r.buf, p...)
	r.buf = nil
	_, err := r.ResponseWriter.Write(held)
	return err
}

func (r *responseRelay) WriteString(s string) (int, error) { return r.Write([]byte(s)) }

func (r *responseRelay) Flush() {
	r.decide()
	r.ResponseWriter.Flush()
}

func (r *responseRelay) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// event returns one whole SSE event with the client's fields restored in
// its response object, and keeps a final one's result.
func (r *responseRelay) event(ev []byte) []byte {
	lines := bytes.Split(ev, []byte("\n"))
	for i, line := range lines {
		d, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		d = r.restore(bytes.TrimPrefix(d, []byte(" ")))
		lines[i] = append([]byte("data: "), d...)
		if res, final, err := responses.ReadStreamEvent(d); err == nil && final {
			r.res = res
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// finish writes a held JSON body, restored, and reads its result; call
// it once the proxy is done.
func (r *responseRelay) finish() {
	if !r.decided || r.pass || r.stream {
		if len(r.buf) > 0 {
			_, _ = r.ResponseWriter.Write(r.buf) // a stream's unfinished last event
			r.buf = nil
		}
		return
	}
	body := r.restore(r.buf)
	r.buf = nil
	if res, err := responses.ReadResult(body); err == nil {
		r.res = res
	}
	_, _ = r.ResponseWriter.Write(body)
}

// restore puts the client's previous_response_id and store into the
// response object in b (a body or an event's data), where the engine
// answered for the stateless request it was sent.
func (r *responseRelay) restore(b []byte) []byte {
	if r.prev != "" {
		b = setMember(b, "previous_response_id", "null", strconv.Quote(r.prev))
	}
	if r.store {
		b = setMember(b, "store", "false", "true")
	}
	return b
}

// setMember replaces the value was of every member named key in the JSON
// text b with to. A quote followed by key and a quote and a colon is
// always a member name in JSON, never string content (a quote in a
// string is escaped).
func setMember(b []byte, key, was, to string) []byte {
	name := []byte(`"` + key + `"`)
	var out []byte
	for {
		i := bytes.Index(b, name)
		if i < 0 {
			return append(out, b...)
		}
		j := i + len(name)
		rest := bytes.TrimLeft(b[j:], " ")
		if len(rest) > 0 && rest[0] == ':' {
			val := bytes.TrimLeft(rest[1:], " ")
			if bytes.HasPrefix(val, []byte(was)) {
				k := len(b) - len(val)
				out = append(append(out, b[:k]...), to...)
				b = b[k+len(was):]
				continue
			}
		}
		out = append(out, b[:j]...)
		b = b[j:]
	}
}

// result returns the response the answer carried, or nil when it carried
// none that can be kept (an error, a failed or cut stream, over the
// limit).
func (r *responseRelay) result() *responses.Result {
	if r.pass || r.res == nil || !keepable(r.res.Status) {
		return nil
	}
	return r.res
}

// keepable reports whether a response with status can be continued: a
// finished one, or one cut short by its token limit, as OpenAI's API
// allows.
func keepable(status string) bool { return status == "completed" || status == "incomplete" }
