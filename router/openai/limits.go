package openai

import (
	"encoding/json"
	"net/http"
)

// maxTokens reads max_completion_tokens, else max_tokens.
func maxTokens(raw *rawRequest, r *Request) error {
	for _, f := range []struct {
		name string
		v    *int64
	}{{"max_completion_tokens", raw.MaxCompletionTokens}, {"max_tokens", raw.MaxTokens}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 {
			return bad("%s must not be negative, got %d", f.name, *f.v)
		}
		r.MaxTokens = *f.v
		return nil
	}
	return nil
}

// Error types and codes OpenAI's API uses for authentication, access and
// rate limits.
const (
	CodeInvalidAPIKey     = "invalid_api_key"
	CodeModelNotFound     = "model_not_found"
	CodeRateLimitExceeded = "rate_limit_exceeded"
	TypeRequests          = "requests"
	TypeTokens            = "tokens"
)

// WriteErrorCode writes an error answer with OpenAI's own type and code
// (e.g. TypeInvalidRequest and CodeInvalidAPIKey), for the errors whose
// code clients match on.
func WriteErrorCode(w http.ResponseWriter, status int, typ, code, message string) {
	b, _ := json.Marshal(struct {
		Error Error `json:"error"`
	}{Error{Message: message, Type: typ, Code: code}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
