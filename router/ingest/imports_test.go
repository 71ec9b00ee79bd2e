package ingest

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// TestImports enforces the package comment's contract: the standard library
// plus only these imports.
func TestImports(t *testing.T) {
	allowed := []string{
		"github.com/hashicorp/go-hclog",
		"github.com/llmgw/llmgw/internal/kvwire",
		"github.com/llmgw/llmgw/router/index",
	}
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range p.Imports {
		if !strings.Contains(strings.Split(imp, "/")[0], ".") {
			continue // standard library
		}
		if !slices.Contains(allowed, imp) {
			t.Errorf("imports %s; the package contract allows only the standard library and %v", imp, allowed)
		}
	}
}
