package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository root: the directory above this package's that
// holds go.mod.
func root(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBenchmarksSaysWhatIs: docs/BENCHMARKS.md holds the current figures,
// each table traceable to its command, date, commit and conditions, with
// no heading named after a branch or a round.
func TestBenchmarksSaysWhatIs(t *testing.T) {
	doc := read(t, filepath.Join(root(t), "docs", "BENCHMARKS.md"))
	if err := checkLength(doc, maxBenchmarkLines); err != nil {
		t.Errorf("docs/BENCHMARKS.md: %v", err)
	}
	for _, h := range badHeadings(doc) {
		t.Errorf("docs/BENCHMARKS.md: a heading names a round or a branch: %s", h)
	}
	for _, tb := range tablesWithoutProvenance(doc) {
		t.Errorf("docs/BENCHMARKS.md: table without a `Command: … · Date: … · Commit: … · Conditions: …` line before it in its section: %s", tb)
	}
}

// TestMakeTargetsFindTheirSections: every section a make target asks
// llmgw bench to rewrite has its marker pair, or the target fails after
// its run.
func TestMakeTargetsFindTheirSections(t *testing.T) {
	dir := root(t)
	mks, err := filepath.Glob(filepath.Join(dir, "mk", "*.mk"))
	if err != nil {
		t.Fatal(err)
	}
	mks = append(mks, filepath.Join(dir, "Makefile"))
	found := 0
	for _, mk := range mks {
		for _, s := range makeSections(read(t, mk)) {
			found++
			doc := read(t, filepath.Join(dir, s.doc))
			for _, m := range missingMarkers(doc, []string{s.section}) {
				t.Errorf("%s writes section %q of %s, which lacks its marker pair", filepath.Base(mk), m, s.doc)
			}
		}
	}
	if found == 0 {
		t.Error("no make target writes a -doc section; misread mk/*.mk?")
	}
}

// TestReadmeSaysWhatLlmgwIs: a reader learns what llmgw is before
// anything else.
func TestReadmeSaysWhatLlmgwIs(t *testing.T) {
	if err := checkReadmeOpening(read(t, filepath.Join(root(t), "README.md")), 15); err != nil {
		t.Errorf("README.md: %v", err)
	}
}

// TestNotesAreDatedAndLinked: each note in docs/notes is named by the date
// of the runs it records and linked from a document outside docs/notes,
// where it matters.
func TestNotesAreDatedAndLinked(t *testing.T) {
	dir := root(t)
	notes, err := filepath.Glob(filepath.Join(dir, "docs", "notes", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var others strings.Builder
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "notes" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			others.WriteString(read(t, p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range notes {
		name := filepath.Base(n)
		if !noteName.MatchString(name) {
			t.Errorf("docs/notes/%s: want YYYY-MM-DD-topic.md", name)
		}
		if !regexp.MustCompile(`\]\([^)]*notes/` + regexp.QuoteMeta(name) + `[)#]`).MatchString(others.String()) {
			t.Errorf("docs/notes/%s is linked from no document outside docs/notes", name)
		}
	}
}
