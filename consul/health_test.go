package consul

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/consul/api"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	check := func(id, status string) *api.HealthCheck { return &api.HealthCheck{CheckID: id, Status: status} }
	serfOK := check("serfHealth", api.HealthPassing)
	tests := []struct {
		name   string
		checks api.HealthChecks
		want   string
	}{
		{"no checks", nil, HealthPassing},
		{"all passing", api.HealthChecks{serfOK, check("service:a", api.HealthPassing)}, HealthPassing},
		{"one warning", api.HealthChecks{serfOK, check("service:a", api.HealthWarning)}, HealthWarning},
		{"critical beats warning", api.HealthChecks{check("a", api.HealthWarning), check("b", api.HealthCritical)}, HealthCritical},
		{"node down", api.HealthChecks{check("serfHealth", api.HealthCritical), check("service:a", api.HealthPassing)}, HealthCritical},
		{"service maintenance", api.HealthChecks{serfOK, check(api.ServiceMaintPrefix+"a", api.HealthCritical)}, HealthMaintenance},
		{"node maintenance", api.HealthChecks{check(api.NodeMaint, api.HealthCritical), serfOK}, HealthMaintenance},
		{"maintenance beats warning", api.HealthChecks{check(api.NodeMaint, api.HealthCritical), check("a", api.HealthWarning)}, HealthMaintenance},
		{"failed replica in maintenance is critical", api.HealthChecks{check(api.ServiceMaintPrefix+"a", api.HealthCritical), check("a", api.HealthCritical)}, HealthCritical},
		{"nil entry ignored", api.HealthChecks{nil, serfOK}, HealthPassing},
	}
	for _, tc := range tests {
		if got := Health(tc.checks); got != tc.want {
			t.Errorf("%s: Health = %q; want %q", tc.name, got, tc.want)
		}
	}
}

// TestConvertByHealth: critical replicas are left out without a complaint,
// warning and maintenance ones are kept as draining; routers are used only
// while every check passes.
func TestConvertByHealth(t *testing.T) {
	t.Parallel()
	withHealth := func(i Instance, h string) Instance { i.Health = h; return i }
	in := []Instance{
		withHealth(replicaInstance("a", nil), HealthPassing),
		withHealth(replicaInstance("b", nil), HealthWarning),
		withHealth(replicaInstance("c", nil), HealthMaintenance),
		withHealth(replicaInstance("d", nil), HealthCritical),
		withHealth(replicaInstance("e", nil), "bogus"),
		replicaInstance("f", nil), // no health: passing
	}
	got, skipped := ConvertReplicas(in)
	checkSkipped(t, skipped, nil)
	type row struct {
		ID       string
		Health   string
		Draining bool
	}
	var rows []row
	for _, r := range got {
		rows = append(rows, row{r.ID, r.Health, r.Draining()})
	}
	want := []row{
		{"alloc-a/vllm", HealthPassing, false},
		{"alloc-b/vllm", HealthWarning, true},
		{"alloc-c/vllm", HealthMaintenance, true},
		{"alloc-f/vllm", HealthPassing, false},
	}
	if d := cmp.Diff(want, rows); d != "" {
		t.Errorf("replicas (-want +got):\n%s", d)
	}

	router := func(id, h string) Instance {
		return Instance{ServiceID: id, Service: RouterService, Node: "n1", Address: "10.0.0.2", Port: 8080, Meta: map[string]string{MetaIngestPort: "9000"}, Health: h}
	}
	routers, skipped := ConvertRouters([]Instance{router("r1", HealthPassing), router("r2", HealthWarning), router("r3", HealthCritical), router("r4", HealthMaintenance), router("r5", "")})
	checkSkipped(t, skipped, nil)
	var ids []string
	for _, r := range routers {
		ids = append(ids, r.ID)
	}
	if d := cmp.Diff([]string{"n1/r1", "n1/r5"}, ids); d != "" {
		t.Errorf("routers (-want +got):\n%s", d)
	}
}
