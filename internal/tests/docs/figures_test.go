package docs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// figures runs scripts/contributing-figures.sh with args and returns its
// exit code.
func figures(t *testing.T, repo string, args ...string) int {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(repo, "scripts", "contributing-figures.sh")}, args...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		t.Logf("contributing-figures.sh %v: %s", args, out)
		return exit.ExitCode()
	}
	t.Fatalf("contributing-figures.sh %v: %v\n%s", args, err, out)
	return -1
}

// TestContributingFiguresMatchTheBuild: the versions and budgets
// CONTRIBUTING.md quotes are what go.mod and the Makefile say (make
// docs-figures writes them).
func TestContributingFiguresMatchTheBuild(t *testing.T) {
	repo := root(t)
	if code := figures(t, repo, "--check", repo); code != 0 {
		t.Errorf("CONTRIBUTING.md's figures differ from the build (exit %d); run make docs-figures", code)
	}
}

// TestContributingFiguresCheckFails: on a fixture repository the check
// passes once the region is written, fails when the build moves on, and
// refuses a document without its markers.
func TestContributingFiguresCheckFails(t *testing.T) {
	repo := root(t)
	fixture := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(fixture, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module x\n\ngo 1.26.7\n")
	write("Makefile", "CONSUL_VERSION := 1.14.11\nFUZZTIME ?= 10000x\n")
	write("CONTRIBUTING.md", "# C\n\n<!-- contributing figures: begin (scripts/contributing-figures.sh) -->\nstale\n<!-- contributing figures: end -->\n\ntail\n")
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(fixture, "CONTRIBUTING.md"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	steps := []struct {
		name   string
		edit   func()
		args   []string
		status int
	}{
		{"a stale region fails", func() {}, []string{"--check", fixture}, 1},
		{"writing it", func() {}, []string{fixture}, 0},
		{"then it passes", func() {}, []string{"--check", fixture}, 0},
		{"a new Consul version fails", func() { write("Makefile", "CONSUL_VERSION := 1.14.12\nFUZZTIME ?= 10000x\n") }, []string{"--check", fixture}, 1},
		{"a new Go version fails", func() {
			write("Makefile", "CONSUL_VERSION := 1.14.11\nFUZZTIME ?= 10000x\n")
			write("go.mod", "module x\n\ngo 1.27.0\n")
		}, []string{"--check", fixture}, 1},
	}
	for _, s := range steps {
		s.edit()
		before := read()
		if got := figures(t, repo, s.args...); got != s.status {
			t.Errorf("%s: exit %d; want %d", s.name, got, s.status)
		}
		if s.args[0] == "--check" && read() != before {
			t.Errorf("%s: --check rewrote the document", s.name)
		}
	}
	if doc := read(); !strings.Contains(doc, "| Go | 1.26.7 |") || !strings.Contains(doc, "| Consul agent the tests run (MPL-2.0) | 1.14.11 |") || !strings.HasSuffix(doc, "\ntail\n") || strings.Contains(doc, "stale") {
		t.Errorf("the written region lacks the build's figures or lost the text around it:\n%s", doc)
	}
	write("CONTRIBUTING.md", "# C\n")
	if got := figures(t, repo, "--check", fixture); got != 2 {
		t.Errorf("a document without markers: exit %d; want 2", got)
	}
}
