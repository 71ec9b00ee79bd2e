package layering

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The patterns are spelled in pieces so that this file does not match
// itself.
var (
	// outsideRefs point at files a clone does not have: the folder of
	// background notes beside the checkout, and its fact sheets.
	outsideRefs = []string{".." + "/" + "sha" + "red", "sha" + "red" + "/reference"}
	// trackerRef cites an issue of a tracker the repository does not
	// carry; say what the code does and why instead.
	trackerRef = regexp.MustCompile(`(?i)\b` + "issue" + `s? \d`)
)

// TestSelfContained: the repository stands on its own. No tracked file
// points outside it (to the background-notes folder beside a checkout, or
// its reference notes), and no Go file or document cites a numbered issue
// of a tracker a clone does not have.
func TestSelfContained(t *testing.T) {
	root, files := trackedFiles(t)
	var problems []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree, not yet committed
			}
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 {
			continue // binary (plots, gzipped goldens)
		}
		problems = append(problems, badRefs(f, string(b))...)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// badRefs lists the references in file name (content text) that point
// outside the repository, as "name:line: why".
func badRefs(name, text string) []string {
	docs := strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".md") || strings.HasSuffix(name, ".proto")
	var out []string
	for i, line := range strings.Split(text, "\n") {
		for _, ref := range outsideRefs {
			if strings.Contains(line, ref) {
				out = append(out, fmt.Sprintf("%s:%d: refers to %q, which a clone does not have: %s", name, i+1, ref, strings.TrimSpace(line)))
			}
		}
		if docs && trackerRef.MatchString(line) {
			out = append(out, fmt.Sprintf("%s:%d: cites an issue of a tracker the repository does not carry: %s", name, i+1, strings.TrimSpace(line)))
		}
	}
	return out
}

func TestBadRefsCatches(t *testing.T) {
	// The bad references are spelled in pieces, so this file is not one.
	const up, sh = "..", "sha" + "red"
	for _, tc := range []struct {
		name, text string
		want       bool
	}{
		{"README.md", "see `" + up + "/" + sh + "/DESIGN.md`", true},
		{"x.proto", "// from " + sh + "/reference/nomad.md", true},
		{"jobs/a.hcl", "# " + sh + "/reference/x", true},
		{"a.go", "// as Issue" + " 7 asks", true},
		{"docs/B.md", "### Round 2 (issue" + " 6)", true},
		{"a.go", "// golang/go#75804, msgspec issue #720", false},
		{"jobs/a.hcl", "# issue" + " 7", false}, // not a Go file or document
		{"a.go", "// the shared token; reference counts", false},
	} {
		if got := len(badRefs(tc.name, tc.text)) > 0; got != tc.want {
			t.Errorf("badRefs(%s, %q) found a problem: %v; want %v", tc.name, tc.text, got, tc.want)
		}
	}
}

// trackedFiles returns the repository root and the files git tracks there.
func trackedFiles(t *testing.T) (string, []string) {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v (this test reads the tracked files of a git checkout)", err)
	}
	root := strings.TrimSpace(string(top))
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 100 {
		t.Fatalf("git ls-files listed %d files; misread?", len(files))
	}
	return root, files
}
