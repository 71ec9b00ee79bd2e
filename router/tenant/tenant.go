// Package tenant names who a request is for. The gateway's authentication
// resolves a client's API key to a Tenant and stores it in the request's
// context; admission, rate limits, cache isolation and metrics read it from
// there. Keeping the type in its own leaf package lets each of those parts
// depend on the identity without depending on how keys are stored.
package tenant

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// Tenant is one application or team the router serves.
type Tenant struct {
	// Name identifies the tenant in limits, queues, metrics and logs. It is
	// never a key.
	Name string
	// Models the tenant may use: base model or LoRA adapter names; empty
	// allows every model.
	Models []string
	// Priority is the tenant's admission band: a higher band is served
	// before a lower one. A request may lower its own band, never raise it.
	Priority int
	// Weight is the tenant's share within its band under weighted fair
	// queueing (0 counts as 1).
	Weight float64
	// Isolated tenants never share prefix cache with another tenant: the
	// router sets vLLM's cache_salt on their requests to CacheSalt.
	Isolated bool
	// CacheSalt is the secret salt of an isolated tenant; the same on every
	// router that reads the same keys, and not guessable by other tenants.
	CacheSalt string
	// Limits bound the tenant's use of the fleet; zero fields are unlimited.
	Limits Limits
}

// Limits are a tenant's budgets. They hold fleet-wide: routers share what
// each has admitted.
type Limits struct {
	// RequestsPerSecond caps admitted requests (a token bucket of one
	// second's burst).
	RequestsPerSecond float64
	// TokensPerMinute caps prompt tokens plus max_tokens, corrected from the
	// response's usage when it ends.
	TokensPerMinute int64
	// MaxConcurrent caps requests in flight, streams included.
	MaxConcurrent int
	// MaxStreams caps streaming responses in flight.
	MaxStreams int
}

// Anonymous is the tenant of every request when no API keys are configured:
// no limits, every model, one shared cache.
var Anonymous = &Tenant{Name: "anonymous", Weight: 1}

// Allows reports whether the tenant may use model.
func (t *Tenant) Allows(model string) bool {
	return len(t.Models) == 0 || slices.Contains(t.Models, model)
}

// ShareWeight is Weight with its zero value read as 1.
func (t *Tenant) ShareWeight() float64 {
	if t.Weight <= 0 {
		return 1
	}
	return t.Weight
}

// SaltFor is the cache_salt an isolated tenant's request carries to the
// engine, given the salt the client sent ("" for none): CacheSalt alone, or
// the hex HMAC-SHA256 of the client's salt keyed by CacheSalt, so a client
// may partition its own tenant's cache but never reach another's. Either
// is 64 hex digits, inside vLLM's 128-character limit and free of the
// characters it refuses, whatever the client sent.
func (t *Tenant) SaltFor(client string) string {
	if client == "" {
		return t.CacheSalt
	}
	return DeriveSalt(t.CacheSalt, client)
}

// DeriveSalt is the hex HMAC-SHA256 of msg keyed by key: how a keys
// file's salt_secret makes each isolated tenant's salt (router/auth) and
// how a tenant's salt absorbs a client's own (SaltFor). 64 hex digits:
// within vLLM's 128 characters and free of the characters it refuses.
func DeriveSalt(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

type ctxKey struct{}

// NewContext returns ctx carrying t.
func NewContext(ctx context.Context, t *Tenant) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the tenant NewContext stored, or Anonymous.
func FromContext(ctx context.Context) *Tenant {
	if t, ok := ctx.Value(ctxKey{}).(*Tenant); ok && t != nil {
		return t
	}
	return Anonymous
}
