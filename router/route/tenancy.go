package route

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/ratelimit"
	"github.com/llmgw/llmgw/router/tenant"
)

// forTenant checks that the request's tenant may use the requested model
// and, for an isolated tenant, salts the request: cache_salt becomes the
// tenant's salt (mixed with any salt the client sent, which therefore
// cannot escape the tenant's cache), both in the body the engine gets and
// in the prompt's block keys, so the router keys the blocks as vLLM will.
func forTenant(t *tenant.Tenant, req *openai.Request) *Error {
	if !t.Allows(req.Model) {
		return notFound(req.Model) // as OpenAI answers: the model's existence is not revealed
	}
	if !t.Isolated || t.CacheSalt == "" {
		return nil
	}
	salt := t.SaltFor(req.CacheSalt)
	body, err := withCacheSalt(req.Body, salt)
	if err != nil {
		return &Error{Status: http.StatusBadRequest, Message: err.Error()}
	}
	req.CacheSalt, req.Body = salt, body
	return nil
}

// withCacheSalt returns the JSON object body with its cache_salt set to
// salt. When no key of body can be a cache_salt to any JSON reader (no
// "cache_salt" in any letter case, no \u escape that could spell one),
// the salt is appended before the closing brace, which copies the body
// once; otherwise the object is decoded and re-encoded with its
// cache_salt replaced, so no duplicate key is left for an engine to read
// the client's salt from.
func withCacheSalt(body []byte, salt string) ([]byte, error) {
	s, _ := json.Marshal(salt)
	trimmed := bytes.TrimRight(body, " \t\r\n")
	if !mayNameCacheSalt(trimmed) && len(trimmed) > 0 && trimmed[len(trimmed)-1] == '}' {
		head := bytes.TrimRight(trimmed[:len(trimmed)-1], " \t\r\n")
		out := make([]byte, 0, len(head)+len(s)+16)
		out = append(out, head...)
		if len(head) > 0 && head[len(head)-1] != '{' {
			out = append(out, ',')
		}
		out = append(out, `"cache_salt":`...)
		out = append(out, s...)
		return append(out, '}'), nil
	}
	var m map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: malformed JSON: %v", openai.ErrBadRequest, err)
	}
	if m == nil { // the body was JSON null
		return nil, fmt.Errorf("%w: the request body must be a JSON object", openai.ErrBadRequest)
	}
	for k := range m {
		if strings.EqualFold(k, "cache_salt") {
			delete(m, k) // Go's decoder matches keys in any case
		}
	}
	m["cache_salt"] = s
	return json.Marshal(m)
}

// mayNameCacheSalt reports whether body could hold a cache_salt key:
// the word in any letter case, or a \u escape, which could spell it.
func mayNameCacheSalt(body []byte) bool {
	if bytes.Contains(body, []byte(`\u`)) {
		return true
	}
	const word = "cache_salt"
	for _, first := range []byte{'c', 'C'} { // IndexByte is vectorised; IndexAny is not
		for rest := body; ; {
			i := bytes.IndexByte(rest, first)
			if i < 0 || len(rest)-i < len(word) {
				break
			}
			if bytes.EqualFold(rest[i:i+len(word)], []byte(word)) {
				return true
			}
			rest = rest[i+1:]
		}
	}
	return false
}

// limit charges the request to its tenant's limits: its prompt and
// max_tokens (limitTokens).
func (pl *Planner) limit(t *tenant.Tenant, req *openai.Request, promptTokens int) (*ratelimit.Grant, ratelimit.Status, *Error) {
	return pl.limitTokens(t, int64(promptTokens)+req.MaxTokens, req.Stream)
}

// limitTokens charges a request of tokens to its tenant's limits, or
// answers 429 with Retry-After and the x-ratelimit-* headers. The Grant
// (nil for a tenant without limits) is finished when the response ends.
func (pl *Planner) limitTokens(t *tenant.Tenant, tokens int64, stream bool) (*ratelimit.Grant, ratelimit.Status, *Error) {
	if pl.d.Limits == nil {
		return nil, ratelimit.Status{Allowed: true}, nil
	}
	grant, st := pl.d.Limits.Admit(t, tokens, stream)
	if st.Allowed {
		return grant, st, nil
	}
	pl.metrics.RateLimited.WithLabelValues(t.Name, string(st.Limit)).Inc()
	es := &Error{Status: http.StatusTooManyRequests, Code: openai.CodeRateLimitExceeded, Type: openai.TypeRequests, Limit: &st}
	switch st.Limit {
	case ratelimit.LimitTokens:
		es.Type = openai.TypeTokens
		es.Message = fmt.Sprintf("Rate limit reached for tenant %s on tokens per minute: limit %d, remaining %d, requested %d. Please try again in %s.",
			t.Name, t.Limits.TokensPerMinute, st.Tokens.Remaining, tokens, ratelimit.FormatReset(st.RetryAfter))
	case ratelimit.LimitTooLarge:
		es.Type = openai.TypeTokens
		es.Message = fmt.Sprintf("Request too large for tenant %s on tokens per minute: limit %d, requested %d (prompt plus max_tokens). Send a shorter prompt or a lower max_tokens.",
			t.Name, t.Limits.TokensPerMinute, tokens)
	case ratelimit.LimitConcurrent:
		es.Message = fmt.Sprintf("Too many concurrent requests for tenant %s: limit %d. Please retry when one ends.", t.Name, t.Limits.MaxConcurrent)
	case ratelimit.LimitStreams:
		es.Message = fmt.Sprintf("Too many concurrent streams for tenant %s: limit %d. Please retry when one ends.", t.Name, t.Limits.MaxStreams)
	default:
		es.Message = fmt.Sprintf("Rate limit reached for tenant %s on requests per second: limit %g. Please try again in %s.",
			t.Name, t.Limits.RequestsPerSecond, ratelimit.FormatReset(st.RetryAfter))
	}
	return nil, st, es
}
