package layering

import (
	"fmt"
	"maps"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// The folder tree shows the architecture (docs/ARCHITECTURE.md, "Layout"):
// each part has one home, parts stack in layers, the deployed binaries link
// neither the simulator nor test support, and test support stays out of
// production code. The tests below check that against go list, on the
// imports of non-test files.

// part is one home of the tree: the folders its packages live under.
type part struct {
	name string
	dirs []string
}

// layers stacks the parts from the bottom up. A package may import
// packages of its own part and of parts on lower layers. An import of a
// part on the same layer or above climbs back up: parts on one layer talk
// over the wire or not at all. Since every import points down, the parts
// cannot form a cycle.
var layers = [][]part{
	{
		{"the driver-router contract", []string{"internal/blockkey", "internal/kvwire"}},
		{"local process plumbing", []string{"internal/localproc"}},
		{"test support", []string{"internal/testkit"}},
	},
	{{"service discovery", []string{"consul", "nomad"}}, {"plugin", []string{"plugin"}}},
	{{"driver", []string{"driver"}}, {"router", []string{"router"}}},
	{{"jobs", []string{"jobs"}}, {"deployment files", []string{"deploy"}}},
	{
		{"the llmgw CLI", []string{"cmd/llmgw"}},
		{"the router binary", []string{"cmd/llmgw-router"}},
		{"the driver binary", []string{"cmd/nomad-driver-vllm"}},
		{"the simulator", []string{"cmd/vllm-sim"}},
		{"the Nomad stand-in", []string{"cmd/nomad-standin"}},
	},
	{{"test suites", []string{"internal/tests"}}},
}

// deployed are the production binaries other than the simulator.
var deployed = []string{"cmd/llmgw-router", "cmd/nomad-driver-vllm", "cmd/llmgw"}

// simulator is the simulator's tree; only vllm-sim and tests may link it.
const simulator = "cmd/vllm-sim"

// pendingImports are known violations, each on its way out on another
// branch. Every check skips them; TestPendingImportsStillExist fails once
// one is gone, so that its entry is deleted with it.
var pendingImports = map[[2]string]string{}

// under reports whether package rel is dir or below it.
func under(rel, dir string) bool {
	return rel == dir || strings.HasPrefix(rel, dir+"/")
}

// testSupport reports why package rel is test support, or "" if it is
// not: everything under internal/testkit and internal/tests, vllm-sim's
// process helper, the growth sweep (router/scalebench), and by Go's
// convention (net/http/httptest) every package whose name ends in
// "test", such as consul/consultest.
func testSupport(rel string) string {
	switch {
	case under(rel, "internal/testkit"), under(rel, "internal/tests"):
		return "test support"
	case rel == simulator+"/simproc":
		return "test support (it runs vllm-sim for tests)"
	case rel == "cmd/nomad-standin":
		return "test support (a stand-in for Nomad's services API)"
	case under(rel, "router/scalebench"):
		// The growth sweep measures discovery against the Nomad stand-in
		// in its process; no deployed binary links it (checkLinks).
		return "test support (the growth sweep, a benchmark)"
	case strings.HasSuffix(path.Base(rel), "test"):
		return "test support (its name ends in \"test\")"
	}
	return ""
}

// partOf returns the layer and the part of package rel; ok is false for a
// package outside every part. The longest matching folder wins.
func partOf(rel string) (layer int, p part, ok bool) {
	best := -1
	for l, ps := range layers {
		for _, q := range ps {
			for _, d := range q.dirs {
				if under(rel, d) && len(d) > best {
					best, layer, p, ok = len(d), l, q, true
				}
			}
		}
	}
	return layer, p, ok
}

// graph maps module packages (module-relative paths) to the module
// packages their non-test files import.
type graph map[string][]string

// loadGraph runs go list on patterns (module-relative; add -deps with
// withDeps) and keeps the module's own packages and imports.
func loadGraph(t *testing.T, withDeps bool, patterns ...string) graph {
	t.Helper()
	args := []string{"list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`}
	if withDeps {
		args = append(args, "-deps")
	}
	for _, p := range patterns {
		args = append(args, module+"/"+p)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	g := graph{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		from, ok := strings.CutPrefix(f[0], module+"/")
		if !ok {
			continue // standard library or a third-party module
		}
		imps := []string{}
		for _, imp := range f[1:] {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				imps = append(imps, rel)
			}
		}
		g[from] = imps
	}
	return g
}

// reach returns every package that root links through g, skipping the
// pending imports, each with the chain of imports that first reached it.
func reach(g graph, root string) map[string][]string {
	chains := map[string][]string{root: {root}}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range g[p] {
			if _, pending := pendingImports[[2]string{p, imp}]; pending {
				continue
			}
			if _, seen := chains[imp]; seen {
				continue
			}
			chains[imp] = append(slices.Clone(chains[p]), imp)
			queue = append(queue, imp)
		}
	}
	return chains
}

// checkLinks lists the simulator and test-support packages a deployed
// binary links, naming the import chain that pulls each one in.
func checkLinks(g graph, bins []string) []string {
	var out []string
	for _, bin := range bins {
		chains := reach(g, bin)
		for _, p := range slices.Sorted(maps.Keys(chains)) {
			why := testSupport(p)
			if why == "" && under(p, simulator) {
				why = "simulator code"
			}
			if why == "" {
				continue
			}
			c := chains[p]
			out = append(out, fmt.Sprintf("%s links %s, which is %s: %s imports %s (chain %s)",
				bin, p, why, c[len(c)-2], p, strings.Join(c, " -> ")))
		}
	}
	return out
}

// checkTestSupport lists the imports of test support by production
// packages (test support may import test support).
func checkTestSupport(g graph) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(g)) {
		if testSupport(p) != "" {
			continue
		}
		for _, imp := range g[p] {
			if _, pending := pendingImports[[2]string{p, imp}]; pending {
				continue
			}
			if why := testSupport(imp); why != "" {
				out = append(out, fmt.Sprintf("%s imports %s, which is %s: only _test.go files and other test support may import it", p, imp, why))
			}
		}
	}
	return out
}

// checkLayers lists the packages outside every part, and the imports that
// climb back up: to a part on the importer's own layer or above.
func checkLayers(g graph) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(g)) {
		pl, pp, ok := partOf(p)
		if !ok {
			out = append(out, fmt.Sprintf("%s lies in no part of the layout: add its folder to layers in layout_test.go and say where it sits in docs/ARCHITECTURE.md", p))
			continue
		}
		for _, imp := range g[p] {
			if _, pending := pendingImports[[2]string{p, imp}]; pending {
				continue
			}
			il, ip, ok := partOf(imp)
			if !ok || ip.name == pp.name || il < pl {
				continue // reported as its own package, or allowed
			}
			out = append(out, fmt.Sprintf("%s imports %s: %s (layer %d) may import only its own part and lower layers, not %s (layer %d)",
				p, imp, pp.name, pl, ip.name, il))
		}
	}
	return out
}

// TestDeployedBinariesLinkNoSimulatorOrTestSupport: go list -deps of the
// router, the driver and the CLI holds no package of the simulator's tree
// and no test support.
func TestDeployedBinariesLinkNoSimulatorOrTestSupport(t *testing.T) {
	g := loadGraph(t, true, deployed...)
	for _, bin := range deployed {
		if n := len(reach(g, bin)); n < 3 {
			t.Fatalf("%s links %d of the module's packages; go list output misread?", bin, n)
		}
	}
	for _, p := range checkLinks(g, deployed) {
		t.Error(p)
	}
}

// TestProductionImportsNoTestSupport: test support is imported only by
// _test.go files and by other test support.
func TestProductionImportsNoTestSupport(t *testing.T) {
	g := loadGraph(t, false, "...")
	n := 0
	for p := range g {
		if testSupport(p) != "" {
			n++
		}
	}
	if n < 8 {
		t.Fatalf("found %d test-support packages; the layout or go list output misread?", n)
	}
	for _, p := range checkTestSupport(g) {
		t.Error(p)
	}
}

// TestLayers: every package lies in one part, and every import points to
// its own part or down a layer.
func TestLayers(t *testing.T) {
	for _, p := range checkLayers(loadGraph(t, false, "...")) {
		t.Error(p)
	}
}

// TestPendingImportsStillExist keeps pendingImports honest: an entry whose
// import is gone must be deleted, or it would excuse its return.
func TestPendingImportsStillExist(t *testing.T) {
	g := loadGraph(t, false, "...")
	for e, why := range pendingImports {
		if !slices.Contains(g[e[0]], e[1]) {
			t.Errorf("%s no longer imports %s (%s): delete its entry from pendingImports", e[0], e[1], why)
		}
	}
}

// TestLayoutChecksCatch runs each check on a small graph with one
// violation of each kind, so that none of them passes vacuously.
func TestLayoutChecksCatch(t *testing.T) {
	g := graph{
		"cmd/llmgw-router":           {"router/server"},
		"router/server":              {"router/prompt", "internal/kvwire", "router/gateway"},
		"router/prompt":              {"cmd/vllm-sim/simtokenizer"},
		"router/gateway":             {"internal/testkit/poll", "driver/kvevents"},
		"driver/kvevents":            {"internal/kvwire"},
		"internal/kvwire":            {"internal/localproc/netport"},
		"internal/localproc/netport": nil,
		"internal/testkit/poll":      nil,
		"cmd/vllm-sim/simtokenizer":  nil,
		"consul/consultest":          {"internal/testkit/poll"},
		"tools/gen":                  nil,
	}
	saved := pendingImports
	pendingImports = nil
	defer func() { pendingImports = saved }()
	for _, tc := range []struct {
		name  string
		got   []string
		wants []string
	}{
		{"links", checkLinks(g, []string{"cmd/llmgw-router"}), []string{
			"cmd/llmgw-router links cmd/vllm-sim/simtokenizer, which is simulator code: router/prompt imports cmd/vllm-sim/simtokenizer (chain cmd/llmgw-router -> router/server -> router/prompt -> cmd/vllm-sim/simtokenizer)",
			"cmd/llmgw-router links internal/testkit/poll, which is test support: router/gateway imports internal/testkit/poll (chain cmd/llmgw-router -> router/server -> router/gateway -> internal/testkit/poll)",
		}},
		{"test support", checkTestSupport(g), []string{
			"router/gateway imports internal/testkit/poll, which is test support: only _test.go files and other test support may import it",
		}},
		{"layers", checkLayers(g), []string{
			"internal/kvwire imports internal/localproc/netport: the driver-router contract (layer 0) may import only its own part and lower layers, not local process plumbing (layer 0)",
			"router/gateway imports driver/kvevents: router (layer 2) may import only its own part and lower layers, not driver (layer 2)",
			"router/prompt imports cmd/vllm-sim/simtokenizer: router (layer 2) may import only its own part and lower layers, not the simulator (layer 4)",
			"tools/gen lies in no part of the layout: add its folder to layers in layout_test.go and say where it sits in docs/ARCHITECTURE.md",
		}},
	} {
		if !slices.Equal(tc.got, tc.wants) {
			t.Errorf("%s check found\n\t%s\nwant\n\t%s", tc.name, strings.Join(tc.got, "\n\t"), strings.Join(tc.wants, "\n\t"))
		}
	}

	// A pending import is skipped by every check.
	pendingImports = map[[2]string]string{{"router/prompt", "cmd/vllm-sim/simtokenizer"}: "example"}
	if got := checkLinks(g, []string{"cmd/llmgw-router"}); len(got) != 1 {
		t.Errorf("with router/prompt's import pending, checkLinks found %q; want only the test-support link", got)
	}
	if got := checkLayers(g); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "router/prompt ") }) {
		t.Errorf("with router/prompt's import pending, checkLayers still found %q", got)
	}
}
