package jobs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzValidate feeds the validator arbitrary jobspecs, seeded with the
// shipped and the broken ones: it must never panic, and every problem must
// name the file and a position in it.
func FuzzValidate(f *testing.F) {
	for _, pattern := range []string{"*.nomad.hcl", "testdata/*.nomad.hcl"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	f.Add([]byte(`job "j" { group "g" { task "t" { driver = "vllm" config { model = var.m } } } }`))
	f.Add([]byte(`job "j" { group "g" { task "t" { driver = "vllm" config { model = "${env["X"]}" port = attr.a.b } } } }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, p := range Validate("fuzz.nomad.hcl", src) {
			if !strings.HasPrefix(p.String(), "fuzz.nomad.hcl:") || p.Message == "" {
				t.Errorf("problem without file or message: %q", p)
			}
		}
	})
}
