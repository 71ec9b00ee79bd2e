package ratelimit

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/llmgw/llmgw/router/tenant"
)

// Limit names the limit a request ran into.
type Limit string

// The limits, as they appear in the error type of a 429 answer.
const (
	LimitRequests   Limit = "requests"
	LimitTokens     Limit = "tokens"
	LimitTooLarge   Limit = "tokens_too_large" // more tokens than a whole minute's budget
	LimitConcurrent Limit = "concurrent_requests"
	LimitStreams    Limit = "concurrent_streams"
)

// Window is one bucket as the x-ratelimit-* headers show it.
type Window struct {
	// Limit is the bucket's size (0: not limited, no headers): requests
	// per second's burst, or tokens per minute.
	Limit int64
	// Remaining is what the bucket holds after this request.
	Remaining int64
	// Reset is how long until the bucket is full again.
	Reset time.Duration
}

// Status is the outcome of Admit.
type Status struct {
	Allowed bool
	// Limit and RetryAfter say, for a refused request, which limit it hit
	// and when a retry can succeed (0 for LimitTooLarge: never).
	Limit      Limit
	RetryAfter time.Duration
	Requests   Window
	Tokens     Window
}

func (s *Status) fill(st *state, lim tenant.Limits) {
	if lim.RequestsPerSecond > 0 {
		size := reqSize(lim)
		s.Requests = Window{Limit: int64(math.Ceil(size)), Remaining: remaining(st.req.level), Reset: st.req.untilFull(lim.RequestsPerSecond, size)}
	}
	if lim.TokensPerMinute > 0 {
		s.Tokens = Window{Limit: lim.TokensPerMinute, Remaining: remaining(st.tok.level), Reset: st.tok.untilFull(tokRate(lim), float64(lim.TokensPerMinute))}
	}
}

func remaining(level float64) int64 { return int64(math.Max(0, math.Floor(level))) }

// The headers OpenAI's API sets and its clients read.
const (
	HeaderLimitRequests     = "x-ratelimit-limit-requests"
	HeaderRemainingRequests = "x-ratelimit-remaining-requests"
	HeaderResetRequests     = "x-ratelimit-reset-requests"
	HeaderLimitTokens       = "x-ratelimit-limit-tokens"
	HeaderRemainingTokens   = "x-ratelimit-remaining-tokens"
	HeaderResetTokens       = "x-ratelimit-reset-tokens"
	HeaderRetryAfter        = "Retry-After"
	// HeaderRetryAfterMs is the millisecond form OpenAI's SDKs prefer.
	HeaderRetryAfterMs = "retry-after-ms"
)

// SetHeaders writes the x-ratelimit-* headers of each limited bucket and,
// for a refused request that can be retried, Retry-After (whole seconds,
// rounded up) and retry-after-ms.
func (s *Status) SetHeaders(h http.Header) {
	for _, w := range []struct {
		win                     Window
		limit, remaining, reset string
	}{
		{s.Requests, HeaderLimitRequests, HeaderRemainingRequests, HeaderResetRequests},
		{s.Tokens, HeaderLimitTokens, HeaderRemainingTokens, HeaderResetTokens},
	} {
		if w.win.Limit <= 0 {
			continue
		}
		h[w.limit] = []string{strconv.FormatInt(w.win.Limit, 10)}
		h[w.remaining] = []string{strconv.FormatInt(w.win.Remaining, 10)}
		h[w.reset] = []string{FormatReset(w.win.Reset)}
	}
	if !s.Allowed && s.RetryAfter > 0 {
		secs := int64(math.Ceil(s.RetryAfter.Seconds()))
		h.Set(HeaderRetryAfter, strconv.FormatInt(max(secs, 1), 10))
		h[HeaderRetryAfterMs] = []string{strconv.FormatInt(max(s.RetryAfter.Milliseconds(), 1), 10)}
	}
}
