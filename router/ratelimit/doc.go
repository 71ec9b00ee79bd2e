// Package ratelimit enforces each tenant's limits (tenant.Limits):
// requests per second and tokens per minute as token buckets, and
// requests and streams in flight as counters.
//
// A request is charged one request and its estimated tokens (the prompt
// plus max_tokens) when it is admitted; when it ends, Grant.Finish
// corrects the token charge to what the response's usage reports.
//
// Limits hold fleet-wide. Each router publishes, per tenant, the running
// totals it has charged and what it has in flight (Own); each router adds
// the growth of its peers' totals to its own buckets' consumption, and
// their in-flight counts to its own (SetPeer). Every router's bucket then
// drains by what the whole fleet admitted, a peer interval late, so the
// fleet as a whole admits close to the configured rate whichever routers
// the requests reach.
//
// Over a limit, a request gets a Status that says which limit, when to
// retry, and the x-ratelimit-* values OpenAI clients read; Status also
// goes on admitted responses. FormatReset and ParseReset write and read
// the reset durations as OpenAI does ("1s", "6m0s", "250ms").
//
// It imports only the standard library and router/tenant.
package ratelimit
