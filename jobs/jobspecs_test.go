package jobs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// shipped lists the jobspecs in this folder, so a new one is covered by
// every test below without being named.
func shipped(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.nomad.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found %d jobspecs (%v); want at least the five shipped ones", len(files), files)
	}
	return files
}

// TestJobspecsFormatted keeps the shipped jobspecs as `hcl fmt` (and
// `nomad fmt`) would write them.
func TestJobspecsFormatted(t *testing.T) {
	t.Parallel()
	for _, f := range shipped(t) {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, diags := hclsyntax.ParseConfig(src, f, hcl.InitialPos); diags.HasErrors() {
				t.Fatalf("%s does not parse: %s", f, diags.Error())
			}
			if got := hclwrite.Format(src); !bytes.Equal(got, src) {
				t.Errorf("%s is not format-clean; hclwrite.Format gives:\n%s", f, got)
			}
		})
	}
}
