package replicas

import (
	"testing"

	"github.com/llmgw/llmgw/consul"
)

func TestParseRole(t *testing.T) {
	for in, want := range map[string]Role{"": RoleAggregated, "agg": RoleAggregated, "prefill": RolePrefill, "decode": RoleDecode} {
		if got, err := ParseRole(in); err != nil || got != want {
			t.Errorf("ParseRole(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseRole("encode"); err == nil || err.Error() != `role "encode": want agg, prefill or decode` {
		t.Errorf("ParseRole(encode): %v", err)
	}
	if RoleAggregated.String() != "agg" || RolePrefill.String() != "prefill" {
		t.Errorf("role names %q %q", RoleAggregated, RolePrefill)
	}
}

// TestRoles: a Consul replica's llmgw-role reaches the set; a model is
// disaggregated only with replicas of both the prefill and the decode
// role.
func TestRoles(t *testing.T) {
	f := newFixture()
	in := []consul.Replica{
		{ID: "p", Model: "m", Address: "10.0.0.1", Port: 1, BlockSize: 16, Role: "prefill", Health: consul.HealthPassing},
		{ID: "d", Model: "m", Address: "10.0.0.2", Port: 1, BlockSize: 16, Role: "decode", Health: consul.HealthPassing},
		{ID: "a", Model: "m", Address: "10.0.0.3", Port: 1, BlockSize: 16, Role: "agg", Health: consul.HealthPassing},
		{ID: "x", Model: "only-prefill", Address: "10.0.0.4", Port: 1, BlockSize: 16, Role: "prefill", Health: consul.HealthPassing},
	}
	f.set.Replace(FromConsul("vllm", in))
	for id, want := range map[string]Role{"p": RolePrefill, "d": RoleDecode, "a": RoleAggregated, "gone": RoleAggregated} {
		if got := f.set.RoleOf(id); got != want {
			t.Errorf("RoleOf(%s) = %q; want %q", id, got, want)
		}
	}
	ids := []string{"a", "d", "p"}
	if got := f.set.RolesOf(nil, func(i int) string { return ids[i] }, len(ids)); len(got) != 3 || got[0] != RoleAggregated || got[1] != RoleDecode || got[2] != RolePrefill {
		t.Errorf("RolesOf(a, d, p) = %v", got)
	}
	if !f.set.Disaggregated("m") || f.set.Disaggregated("only-prefill") || f.set.Disaggregated("nothing") {
		t.Errorf("Disaggregated: m %v, only-prefill %v, nothing %v; want true, false, false",
			f.set.Disaggregated("m"), f.set.Disaggregated("only-prefill"), f.set.Disaggregated("nothing"))
	}
}
