package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/llmgw/llmgw"

// deps returns the transitive imports of the packages matching pattern,
// keyed by importing package.
func deps(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps=false", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, pattern).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "matched no packages") {
			return nil
		}
		t.Fatalf("go list %s: %v\n%s", pattern, err, out)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		m[f[0]] = f[1:]
	}
	return m
}

// TestLayering checks finer rules than TestLayers (layout_test.go), which
// already forbids every import of a command by a lower layer and every
// import between parts of one layer; these rules follow imports
// transitively.
func TestLayering(t *testing.T) {
	rules := []struct {
		from      string // go list pattern
		forbidden string // import path prefix
		why       string
	}{
		{module + "/router/...", module + "/driver", "routers learn block state only over the wire"},
		{module + "/driver/...", module + "/router", "drivers talk to routers only over the wire"},
		{module + "/driver/...", "github.com/gin-gonic/gin", "the driver serves no HTTP API"},
		{module + "/plugin/...", module + "/driver", "the plugin protocol knows nothing about vLLM"},
		{module + "/consul/...", module + "/router", "consul/ is below router/"},
		{module + "/consul/...", module + "/driver", "consul/ is below driver/"},
		{module + "/nomad/...", module + "/router", "nomad/ is below router/"},
		{module + "/nomad/...", module + "/driver", "nomad/ is below driver/"},
		{module + "/jobs/...", module + "/plugin/pluginhost", "pluginhost is test support"},
		{module + "/driver/...", module + "/plugin/pluginhost", "pluginhost is test support"},
		{module + "/router/...", module + "/plugin/pluginhost", "pluginhost is test support"},
		// cmd/llmgw reaches pluginhost only through its fleet package
		// (see TestOnlyFleetHostsPlugins); the deployed daemons never do.
		{module + "/cmd/nomad-driver-vllm/...", module + "/plugin/pluginhost", "pluginhost is test support"},
		{module + "/cmd/llmgw-router/...", module + "/plugin/pluginhost", "pluginhost is test support"},
		{module + "/cmd/vllm-sim/...", module + "/plugin/pluginhost", "pluginhost is test support"},
		{module + "/jobs/...", module + "/router", "jobspecs are checked against the driver, not the router"},
		{module + "/router/scheduler/...", module + "/router/peerpolicy",
			"the peers' policies are plugins the router registers through server.WithPlugins; the scheduler holds only llmgw's own"},
		{module + "/cmd/llmgw/internal/fleet/...", module + "/router", "the fleet runs routers as processes"},
		{module + "/cmd/llmgw/internal/fleet/...", module + "/driver", "the fleet runs the driver over the plugin protocol"},
		// The driver's two KV-event pipelines meet only at the Store.
		{module + "/driver/kvevents", module + "/driver/kvevents", "the Store is below the intake and the forwarder"},
		{module + "/driver/kvevents/intake", module + "/driver/kvevents/forward", "intake and forwarding meet only at the Store"},
		{module + "/driver/kvevents/forward", module + "/driver/kvevents/intake", "intake and forwarding meet only at the Store"},
		{module + "/driver/...", module + "/driver/kvevents/kvtest", "kvtest is test support"},
		{module + "/cmd/...", module + "/driver/kvevents/kvtest", "kvtest is test support"},
	}
	for _, r := range rules {
		pkgs := deps(t, r.from)
		if len(pkgs) == 0 {
			t.Errorf("rule %s -> %s: %s matches no package; was it moved?", r.from, r.forbidden, r.from)
		}
		for pkg, imports := range pkgs {
			for _, imp := range imports {
				if imp == r.forbidden || strings.HasPrefix(imp, r.forbidden+"/") {
					t.Errorf("%s imports %s: %s", pkg, imp, r.why)
				}
			}
		}
	}
}

// TestLayeringCatchesViolation makes sure the rule check is not vacuous: the
// command packages really do depend on the module's own packages, so an
// empty dependency list would mean go list is being misread.
func TestLayeringSeesDependencies(t *testing.T) {
	all := deps(t, module+"/...")
	if len(all) == 0 {
		t.Fatal("go list returned no packages for the module")
	}
	if _, ok := all[module+"/internal/tests/layering"]; !ok {
		t.Errorf("go list output lacks this package; got %d packages", len(all))
	}
}

// TestOnlyFleetHostsPlugins: plugin/pluginhost plays the Nomad client.
// Tests use it, and so does cmd/llmgw/internal/fleet, which runs the whole
// chain on one machine for `llmgw demo` and the benchmarks where no Nomad
// agent can run; no other production package may import it directly.
func TestOnlyFleetHostsPlugins(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const host, fleet = module + "/plugin/pluginhost", module + "/cmd/llmgw/internal/fleet"
	seen := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		for _, imp := range f[1:] {
			if imp != host {
				continue
			}
			if f[0] == fleet {
				seen = true
			} else {
				t.Errorf("%s imports %s: only cmd/llmgw/internal/fleet may host the plugin outside tests", f[0], host)
			}
		}
	}
	if !seen {
		t.Errorf("cmd/llmgw/internal/fleet does not import %s; go list output misread?", host)
	}
}
