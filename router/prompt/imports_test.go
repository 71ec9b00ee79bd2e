package prompt

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
		"github.com/cespare/xxhash/v2",
		"github.com/llmgw/llmgw/internal/blockkey",
		"github.com/llmgw/llmgw/internal/simtokenizer",
		"github.com/llmgw/llmgw/router/chattemplate",
		"github.com/llmgw/llmgw/router/openai",
		"github.com/llmgw/llmgw/router/tokenizer",
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
