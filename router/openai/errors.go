package openai

import (
	"encoding/json"
	"net/http"
)

// Error is the body of every error answer, as OpenAI's API shapes it.
type Error struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    any     `json:"code"`
}

// Error types, as OpenAI and vLLM use them.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeNotFound       = "NotFoundError"
	TypeRateLimit      = "rate_limit_error"
	TypeServer         = "server_error"
	TypeUnavailable    = "service_unavailable"
)

// TypeFor returns the error type that goes with an HTTP status.
func TypeFor(status int) string {
	switch {
	case status == http.StatusNotFound:
		return TypeNotFound
	case status == http.StatusTooManyRequests:
		return TypeRateLimit
	case status == http.StatusServiceUnavailable:
		return TypeUnavailable
	case status >= 500:
		return TypeServer
	}
	return TypeInvalidRequest
}

// ErrorBody returns the JSON of an error answer.
func ErrorBody(status int, message string) []byte {
	b, _ := json.Marshal(struct {
		Error Error `json:"error"`
	}{Error{Message: message, Type: TypeFor(status), Code: status}})
	return b
}

// WriteError writes an OpenAI-shaped error answer.
func WriteError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(ErrorBody(status, message))
}
