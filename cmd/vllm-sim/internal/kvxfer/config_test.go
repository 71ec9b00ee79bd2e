package kvxfer

import (
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	fixed := func() string { return "generated-id" }
	for _, tc := range []struct {
		name, in string
		role     string
		engineID string
		policy   string
		err      string
	}{
		{name: "producer", in: `{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`, role: RoleProducer, engineID: "generated-id", policy: "fail"},
		{name: "consumer with id", in: `{"kv_connector":"NixlConnector","kv_role":"kv_consumer","engine_id":"d0"}`, role: RoleConsumer, engineID: "d0", policy: "fail"},
		{name: "both, recompute", in: `{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_load_failure_policy":"recompute","kv_buffer_device":"cuda","kv_connector_extra_config":{"backends":["UCX"]}}`, role: RoleBoth, engineID: "generated-id", policy: "recompute"},
		{name: "no connector", in: `{}`, engineID: "generated-id", policy: "fail"},
		{name: "unknown role", in: `{"kv_connector":"NixlConnector","kv_role":"kv_prefill"}`, err: `unsupported kv_role "kv_prefill"`},
		{name: "role missing", in: `{"kv_connector":"NixlConnector"}`, err: "kv_role is required"},
		{name: "unknown connector", in: `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`, err: `kv_connector "LMCacheConnectorV1" is not simulated`},
		{name: "role without connector", in: `{"kv_role":"kv_both"}`, err: "needs a kv_connector"},
		{name: "unknown field", in: `{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_rol":"x"}`, err: `unknown field "kv_rol"`},
		{name: "bad policy", in: `{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_load_failure_policy":"retry"}`, err: "kv_load_failure_policy"},
		{name: "not JSON", in: `kv_both`, err: "--kv-transfer-config"},
		{name: "trailing", in: `{} {}`, err: "trailing data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig(tc.in, fixed)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Role != tc.role || c.EngineID != tc.engineID || c.LoadFailurePolicy != tc.policy {
				t.Errorf("got role %q engine %q policy %q; want %q %q %q", c.Role, c.EngineID, c.LoadFailurePolicy, tc.role, tc.engineID, tc.policy)
			}
		})
	}
}

func TestNewEngineIDIsAUUID4(t *testing.T) {
	a, b := NewEngineID(), NewEngineID()
	if a == b || len(a) != 36 || a[14] != '4' || !strings.ContainsRune("89ab", rune(a[19])) {
		t.Errorf("engine ids %q, %q: want two distinct version-4 UUIDs", a, b)
	}
}
