package layering

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmgw/llmgw/router/peerpolicy"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestSchedulerHoldsNoPeerPolicy: the peers' routing policies live in
// router/peerpolicy and reach the scheduler only as plugins, so that
// router/scheduler holds llmgw's own policy alone. TestLayering keeps the
// scheduler from importing the peer package and TestPackageContracts
// keeps the peer package on the scheduler's exported API; this test fails
// if the scheduler registers a peer's plugin type among its built-ins or
// declares an exported type of the peer package's (a policy or its
// params) again.
func TestSchedulerHoldsNoPeerPolicy(t *testing.T) {
	builtins := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(builtins); err != nil {
		t.Fatal(err)
	}
	peers := scheduler.NewRegistry()
	if err := peerpolicy.Register(peers); err != nil {
		t.Fatal(err)
	}
	if len(peers.Types()) == 0 {
		t.Fatal("peerpolicy.Register registered no type; the check below would be vacuous")
	}
	for _, typ := range peers.Types() {
		if slices.Contains(builtins.Types(), typ) {
			t.Errorf("scheduler.RegisterBuiltins registers %q, a peer's policy: register it only in router/peerpolicy", typ)
		}
	}

	peerTypes := declaredTypes(t, "router/peerpolicy")
	if !slices.Contains(peerTypes, "DynamoCostScorer") {
		t.Fatalf("router/peerpolicy declares %v, without DynamoCostScorer; is the declaration scan misreading it?", peerTypes)
	}
	for _, name := range declaredTypes(t, "router/scheduler") {
		if slices.Contains(peerTypes, name) {
			t.Errorf("router/scheduler declares type %s, which router/peerpolicy declares: the peers' policies live only there", name)
		}
	}
}

// declaredTypes lists the exported package-level type names declared in
// the non-test Go files of the module package at dir.
func declaredTypes(t *testing.T, dir string) []string {
	t.Helper()
	abs := filepath.Join("..", "..", "..", dir)
	p, err := build.ImportDir(abs, 0)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(abs, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				if n := s.(*ast.TypeSpec).Name; n.IsExported() {
					names = append(names, n.Name)
				}
			}
		}
	}
	return names
}
