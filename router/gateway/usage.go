package gateway

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
)

// usageTail is how much of a response's end is kept to find its usage:
// the usage object is a few hundred bytes, and only a stream's [DONE] or
// a few null fields follow it.
const usageTail = 4 << 10

// usageWriter passes a response through to the client while keeping its
// last bytes, so that the tokens it used can be read from its usage when
// it ends: the non-streamed body's "usage", or a stream's last usage
// chunk (sent when the client asked for stream_options.include_usage).
type usageWriter struct {
	http.ResponseWriter
	tail []byte // from tails, returned by release
}

// tails reuses the writers' buffers: a fresh one per request would cost
// more than everything else tenancy adds.
var tails = sync.Pool{New: func() any { b := make([]byte, 0, 2*usageTail); return &b }}

// release returns the writer's buffer; the writer keeps no tail after.
func (u *usageWriter) release() {
	if u.tail != nil {
		b := u.tail[:0]
		tails.Put(&b)
		u.tail = nil
	}
}

func (u *usageWriter) Write(p []byte) (int, error) {
	n, err := u.ResponseWriter.Write(p)
	p = p[:n]
	if u.tail == nil {
		u.tail = (*tails.Get().(*[]byte))[:0]
	}
	if len(p) >= usageTail {
		u.tail = append(u.tail[:0], p[len(p)-usageTail:]...)
	} else {
		u.tail = append(u.tail, p...)
		if len(u.tail) > 2*usageTail {
			u.tail = append(u.tail[:0], u.tail[len(u.tail)-usageTail:]...)
		}
	}
	return n, err
}

// Flush and Unwrap let the proxy flush each SSE event at once.
func (u *usageWriter) Flush() {
	if f, ok := u.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (u *usageWriter) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// usedTokens returns the prompt plus completion tokens of the response's
// last usage object, or -1 when it has none: total_tokens (chat,
// completions, Responses), else prompt_tokens and completion_tokens, else
// input_tokens and output_tokens (Messages).
func usedTokens(tail []byte) int64 {
	key := []byte(`"usage"`)
	// In JSON text a quote inside a string is escaped, so `"usage"`
	// followed by a colon is always a key, never string content.
	for end := len(tail); ; {
		i := bytes.LastIndex(tail[:end], key)
		if i < 0 {
			return -1
		}
		end = i
		rest := bytes.TrimLeft(tail[i+len(key):], " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			continue
		}
		obj := objectAt(bytes.TrimLeft(rest[1:], " \t\r\n"))
		if obj == nil {
			return -1
		}
		if total, ok := intField(obj, "total_tokens"); ok {
			return total
		}
		for _, names := range [...][2]string{{"prompt_tokens", "completion_tokens"}, {"input_tokens", "output_tokens"}} {
			p, okP := intField(obj, names[0])
			c, okC := intField(obj, names[1])
			if okP && okC {
				return p + c
			}
		}
		return -1 // "usage": null, or output tokens alone (an Anthropic stream's message_delta)
	}
}

// objectAt returns the JSON object b starts with, up to its closing brace,
// or nil when b does not start with a whole one.
func objectAt(b []byte) []byte {
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++ // skip the escaped byte
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth == 0 {
				return b[:i+1]
			}
		}
	}
	return nil
}

// intField reads the non-negative integer of "name" in the JSON object
// obj (usage objects nest only prompt_tokens_details, whose keys differ).
func intField(obj []byte, name string) (int64, bool) {
	i := bytes.Index(obj, []byte(`"`+name+`"`))
	if i < 0 {
		return 0, false
	}
	rest := bytes.TrimLeft(obj[i+len(name)+2:], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return 0, false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	n := 0
	for n < len(rest) && n < 18 && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || n < len(rest) && (rest[n] == '.' || rest[n] == 'e' || rest[n] == 'E' || rest[n] >= '0' && rest[n] <= '9') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(rest[:n]), 10, 64)
	return v, err == nil
}
