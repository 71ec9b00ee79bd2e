package peers

import (
	"fmt"

	"github.com/llmgw/llmgw/router/ratelimit"
)

// Tenant is the sender's use of one tenant's limits: running totals of
// the requests and tokens it charged since it started, and what it has in
// flight now (ratelimit.Usage).
type Tenant struct {
	Name     string `json:"tenant"`
	Requests int64  `json:"requests"`
	Tokens   int64  `json:"tokens"`
	InFlight int    `json:"in_flight"`
	Streams  int    `json:"streams"`
}

// MaxTenants is the most tenants one message may list.
const MaxTenants = 8192

// maxTotal bounds the running totals: 2^53, where JSON numbers stop
// being exact.
const maxTotal = 1 << 53

// TenantSink takes the peers' use of tenants' limits; ratelimit.Limiter
// is one.
type TenantSink interface {
	SetPeer(peer string, usage map[string]ratelimit.Usage)
	ForgetPeer(peer string)
}

func (m *Message) validateTenants() error {
	if len(m.Tenants) == 0 {
		return nil
	}
	if m.Version < 2 {
		return fmt.Errorf("tenants need version 2, the message has version %d", m.Version)
	}
	if len(m.Tenants) > MaxTenants {
		return fmt.Errorf("%d tenants: at most %d", len(m.Tenants), MaxTenants)
	}
	seen := make(map[string]bool, len(m.Tenants))
	for i, t := range m.Tenants {
		if t.Name == "" || len(t.Name) > maxID {
			return fmt.Errorf("tenants[%d]: name must have 1 to %d bytes, has %d", i, maxID, len(t.Name))
		}
		if seen[t.Name] {
			return fmt.Errorf("tenants[%d]: tenant %q listed twice", i, t.Name)
		}
		seen[t.Name] = true
		if t.Requests < 0 || t.Requests > maxTotal || t.Tokens < 0 || t.Tokens > maxTotal {
			return fmt.Errorf("tenant %q: requests %d and tokens %d must be within 0..2^53", t.Name, t.Requests, t.Tokens)
		}
		if t.InFlight < 0 || t.InFlight > maxCount || t.Streams < 0 || t.Streams > maxCount {
			return fmt.Errorf("tenant %q: in_flight %d and streams %d must be within 0..%d", t.Name, t.InFlight, t.Streams, maxCount)
		}
	}
	return nil
}

// usageOf is a message's tenants as the sink takes them.
func usageOf(ts []Tenant) map[string]ratelimit.Usage {
	out := make(map[string]ratelimit.Usage, len(ts))
	for _, t := range ts {
		out[t.Name] = ratelimit.Usage{Requests: t.Requests, Tokens: t.Tokens, InFlight: t.InFlight, Streams: t.Streams}
	}
	return out
}

// tenantsOf is the own usage as a message lists it, by name.
func tenantsOf(u map[string]ratelimit.Usage, names []string) []Tenant {
	out := make([]Tenant, 0, len(u))
	for _, n := range names {
		v := u[n]
		out = append(out, Tenant{Name: n, Requests: v.Requests, Tokens: v.Tokens, InFlight: v.InFlight, Streams: v.Streams})
	}
	return out
}
