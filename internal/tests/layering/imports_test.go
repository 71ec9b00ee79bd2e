package layering

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStandardLibraryImportsFirst: in every hand-written Go file the
// standard library's imports come before any other module's. goimports
// -local (make lint) keeps this module's packages in a group of their own
// after the rest, but leaves a standard-library import where it finds it
// once it sits in a group of its own: tools that add `maps` or `slices`
// put them after the last group.
func TestStandardLibraryImportsFirst(t *testing.T) {
	root, files := trackedFiles(t)
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, ".pb.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if p := stdAfterOthers(t, f, src); p != "" {
			t.Errorf("%s: standard-library import %q after another module's; put it in the first group", f, p)
		}
	}
}

// stdAfterOthers returns the first standard-library import of src that
// follows another module's, "" when there is none.
func stdAfterOthers(t *testing.T, name string, src []byte) string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	other := false
	for _, im := range file.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		switch std := !strings.Contains(strings.SplitN(p, "/", 2)[0], "."); {
		case !std:
			other = true
		case other:
			return p
		}
	}
	return ""
}

func TestStdAfterOthersCatches(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"package p\nimport (\n\t\"fmt\"\n\n\t\"github.com/a/b\"\n)\n", ""},
		{"package p\nimport (\n\t\"fmt\"\n\n\t\"github.com/a/b\"\n\n\t\"maps\"\n)\n", "maps"},
		{"package p\nimport \"github.com/a/b\"\nimport \"os\"\n", "os"},
	} {
		if got := stdAfterOthers(t, "x.go", []byte(tc.src)); got != tc.want {
			t.Errorf("%q: got %q; want %q", tc.src, got, tc.want)
		}
	}
}
