package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
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
	tail []byte
}

func (u *usageWriter) Write(p []byte) (int, error) {
	n, err := u.ResponseWriter.Write(p)
	p = p[:n]
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
// last usage object, or -1 when it has none.
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
		var u struct {
			PromptTokens     *int64 `json:"prompt_tokens"`
			CompletionTokens *int64 `json:"completion_tokens"`
			TotalTokens      *int64 `json:"total_tokens"`
		}
		if err := json.NewDecoder(bytes.NewReader(rest[1:])).Decode(&u); err != nil {
			return -1
		}
		switch {
		case u.TotalTokens != nil && *u.TotalTokens >= 0:
			return *u.TotalTokens
		case u.PromptTokens != nil && u.CompletionTokens != nil && *u.PromptTokens >= 0 && *u.CompletionTokens >= 0:
			return *u.PromptTokens + *u.CompletionTokens
		}
		return -1 // "usage": null
	}
}
