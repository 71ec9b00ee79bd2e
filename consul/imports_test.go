package consul

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports enforces the package comment's contract: the standard library
// plus only these imports.
func TestImports(t *testing.T) {
	allowed := []string{"github.com/hashicorp/consul/api", "github.com/hashicorp/go-hclog"}
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range p.Imports {
		if !strings.Contains(strings.Split(imp, "/")[0], ".") {
			continue // standard library
		}
		ok := false
		for _, a := range allowed {
			ok = ok || imp == a
		}
		if !ok {
			t.Errorf("imports %s; the package contract allows only the standard library and %v", imp, allowed)
		}
	}
}
