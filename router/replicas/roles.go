package replicas

import "fmt"

// Role is a replica's part in prefill/decode disaggregated serving, from
// its Consul meta llmgw-role or a static replica's config: an aggregated
// replica serves whole requests, a prefill replica computes prompts' KV
// blocks for decode replicas to pull, a decode replica generates from
// pulled blocks (router/disagg has the protocol).
type Role string

// The roles. RoleAggregated is the zero value: replicas that say nothing
// serve as they always did.
const (
	RoleAggregated Role = ""
	RolePrefill    Role = "prefill"
	RoleDecode     Role = "decode"
)

// String names the role as the admin API shows it.
func (r Role) String() string {
	if r == RoleAggregated {
		return "agg"
	}
	return string(r)
}

// ParseRole reads a role as Consul meta and the config write it: "" or
// "agg" (aggregated), "prefill" or "decode".
func ParseRole(s string) (Role, error) {
	switch s {
	case "", "agg":
		return RoleAggregated, nil
	case "prefill":
		return RolePrefill, nil
	case "decode":
		return RoleDecode, nil
	}
	return RoleAggregated, fmt.Errorf("role %q: want agg, prefill or decode", s)
}

// RoleOf is ParseRole for a value already validated (consul.Convert
// refuses other roles): anything unknown is aggregated.
func RoleOf(s string) Role {
	r, _ := ParseRole(s)
	return r
}

// RoleOf returns replica's role (aggregated for an unknown replica).
func (s *Set) RoleOf(replica string) Role {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byID[replica].Role
}

// RolesOf appends to dst the role of each candidate id in ids, read under
// one lock: the gateway splits a model's candidates by role on every
// request to a disaggregated model.
func (s *Set) RolesOf(dst []Role, ids func(i int) string, n int) []Role {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range n {
		dst = append(dst, s.byID[ids(i)].Role)
	}
	return dst
}

// Disaggregated reports whether model (or the base model of an adapter)
// has replicas of both the prefill and the decode role, healthy or not:
// only such a model is routed in two steps.
func (s *Set) Disaggregated(model string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var p, d bool
	for _, r := range s.forModelLocked(model) {
		p = p || r.Role == RolePrefill
		d = d || r.Role == RoleDecode
	}
	return p && d
}
