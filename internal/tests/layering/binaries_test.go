package layering

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// simulatorPackages are the simulator's packages by last path element,
// wherever they live, plus everything under cmd/vllm-sim.
var simulatorPackages = map[string]bool{"simtokenizer": true, "simproc": true, "kvvectors": true, "simencoder": true}

func isSimulator(pkg string) bool {
	rel := strings.TrimPrefix(pkg, module+"/")
	if rel == pkg {
		return false // outside the module
	}
	return rel == "cmd/vllm-sim" || strings.HasPrefix(rel, "cmd/vllm-sim/") || simulatorPackages[path.Base(rel)]
}

// TestProductionBinariesLinkNoSimulator: every binary of the module except
// vllm-sim itself is built without simulator code, so the production
// request path (llmgw-router tokenizes sim models on their engines) and
// the CLI never run it. Tests may import it freely; binaries may not.
func TestProductionBinariesLinkNoSimulator(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var bins []string
	for _, b := range strings.Fields(string(out)) {
		if !isSimulator(b) {
			bins = append(bins, b)
		}
	}
	if len(bins) < 3 {
		t.Fatalf("found binaries %v; want llmgw, llmgw-router and nomad-driver-vllm at least", bins)
	}
	for _, b := range bins {
		deps, err := exec.Command("go", "list", "-deps", b).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", b, err, deps)
		}
		for _, d := range strings.Fields(string(deps)) {
			if isSimulator(d) {
				t.Errorf("%s links simulator package %s", strings.TrimPrefix(b, module+"/"), strings.TrimPrefix(d, module+"/"))
			}
		}
	}
}

func TestIsSimulator(t *testing.T) {
	for pkg, want := range map[string]bool{
		module + "/internal/simtokenizer":           true,
		module + "/cmd/vllm-sim/simtokenizer":       true,
		module + "/cmd/vllm-sim/internal/server":    true,
		module + "/cmd/vllm-sim/simencoder":         true,
		module + "/internal/kvvectors":              true,
		module + "/router/prompt":                   false,
		module + "/cmd/vllm-simulated":              false,
		"github.com/hashicorp/golang-lru/simplelru": false,
		"example.com/other/simtokenizer":            false,
	} {
		if got := isSimulator(pkg); got != want {
			t.Errorf("isSimulator(%s) = %v; want %v", pkg, got, want)
		}
	}
}
