package anthropic

import (
	"net/http"
)

// Error types as Anthropic's API names them.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeAuthentication = "authentication_error"
	TypeBilling        = "billing_error"
	TypePermission     = "permission_error"
	TypeNotFound       = "not_found_error"
	TypeTooLarge       = "request_too_large"
	TypeRateLimit      = "rate_limit_error"
	TypeAPI            = "api_error"
	TypeTimeout        = "timeout_error"
	TypeOverloaded     = "overloaded_error"
)

// ErrorType returns Anthropic's error type for an HTTP status, for the
// errors the router answers itself; Anthropic clients branch on it.
// Anthropic answers overload with 529, and the router's 503 (no replica
// can take the request) means the same. vLLM's bridge, by contrast, puts
// its OpenAI error type (BadRequestError, NotFoundError ...) in the same
// field; the router passes an engine's answer through unchanged.
func ErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return TypeAuthentication
	case http.StatusPaymentRequired:
		return TypeBilling
	case http.StatusForbidden:
		return TypePermission
	case http.StatusNotFound:
		return TypeNotFound
	case http.StatusRequestEntityTooLarge:
		return TypeTooLarge
	case http.StatusTooManyRequests:
		return TypeRateLimit
	case http.StatusGatewayTimeout:
		return TypeTimeout
	case http.StatusServiceUnavailable, 529:
		return TypeOverloaded
	}
	if status >= 500 {
		return TypeAPI
	}
	return TypeInvalidRequest
}

// ErrorBody returns an error answer's JSON in Anthropic's shape:
// {"type":"error","error":{"type":"...","message":"..."}}.
func ErrorBody(status int, message string) []byte {
	b, _ := marshal(object{
		{"type", "error"},
		{"error", object{{"type", ErrorType(status)}, {"message", message}}},
	})
	return b
}

// WriteError writes an Anthropic-shaped error answer.
func WriteError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(ErrorBody(status, message))
}
