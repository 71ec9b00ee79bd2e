package layering

import (
	"go/build"
	"path/filepath"
	"slices"
	"testing"
)

// decisionPackages are what a routing decision is made of. Only the
// planner (router/route) puts them together; an HTTP front end that
// imported one of them would be making part of the decision itself,
// beside the planner instead of through it.
var decisionPackages = []string{
	module + "/router/scheduler",
	module + "/router/replicas",
	module + "/router/load",
	module + "/router/index",
	module + "/router/kvgroups",
	module + "/router/prompt",
	module + "/router/ratelimit",
}

// frontEnds are the packages that serve an API and must reach scheduling
// only through router/route.
var frontEnds = []string{"router/gateway"}

// TestFrontEndsDecideThroughThePlanner fails when an API package's
// non-test files import a decision package directly.
func TestFrontEndsDecideThroughThePlanner(t *testing.T) {
	for _, dir := range frontEnds {
		p, err := build.ImportDir(filepath.Join("..", "..", "..", dir), 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if !slices.Contains(p.Imports, module+"/router/route") {
			t.Errorf("%s does not import router/route; every API reaches scheduling through the planner", dir)
		}
		if bad := decisionImports(p.Imports); len(bad) > 0 {
			t.Errorf("%s imports %v directly; it must reach scheduling only through router/route", dir, bad)
		}
	}
}

// decisionImports returns the decision packages among imports.
func decisionImports(imports []string) []string {
	var bad []string
	for _, imp := range imports {
		if slices.Contains(decisionPackages, imp) {
			bad = append(bad, imp)
		}
	}
	return bad
}

func TestDecisionImports(t *testing.T) {
	for _, tc := range []struct {
		imports []string
		want    int
	}{
		{[]string{module + "/router/route", "net/http"}, 0},
		{[]string{module + "/router/scheduler"}, 1},
		{[]string{module + "/router/replicas", module + "/router/load", module + "/router/openai"}, 2},
		{[]string{module + "/router/schedulerx"}, 0},
	} {
		if got := decisionImports(tc.imports); len(got) != tc.want {
			t.Errorf("decisionImports(%v) = %v; want %d", tc.imports, got, tc.want)
		}
	}
}
