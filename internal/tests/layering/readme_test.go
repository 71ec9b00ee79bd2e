package layering

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeListsEveryPackage: the README's layout table names every
// package of the module, so a new maintainer finds each one's room. A new
// package fails this test until it has its row.
func TestReadmeListsEveryPackage(t *testing.T) {
	root, _ := trackedFiles(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; misread?", len(pkgs))
	}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p, module+"/")
		if !strings.Contains(string(readme), "`"+rel+"`") {
			t.Errorf("README.md's layout table has no row for `%s`", rel)
		}
	}
}
