package docs

import (
	"fmt"
	"regexp"
	"strings"
)

// maxBenchmarkLines bounds docs/BENCHMARKS.md: the current figures fit in
// it; history goes to docs/notes.
const maxBenchmarkLines = 600

// provenance is the line every table in docs/BENCHMARKS.md follows, as
// llmgw bench's renderer writes it
// (cmd/llmgw/internal/bench/report/provenance.go).
var provenance = regexp.MustCompile(`^Command: .+ · Date: \d{4}-\d{2}-\d{2} · Commit: [0-9a-f]{7,40}\b.* · Conditions: \S`)

// roundWord and branchWord find the headings of a lab notebook: a
// "round" of measurements, or a lower-case word ending in digits such as
// a branch name (index3). Versions (v2) and upper-case names (H100) pass.
var (
	roundWord  = regexp.MustCompile(`(?i)\bround\b`)
	branchWord = regexp.MustCompile(`\b[a-z][a-z_-]*[a-z][0-9]+\b`)
	branchRef  = regexp.MustCompile(`(?i)\bbranch\b`)
)

// readmeOpening is the line that says what llmgw is.
var readmeOpening = regexp.MustCompile(`^(\*\*llmgw\*\*|llmgw) is `)

// noteName is a dated note's file name: the date of the runs it records
// and its topic.
var noteName = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}-[a-z0-9]+(-[a-z0-9]+)*\.md$`)

// line is one line of a Markdown file outside code fences.
type line struct {
	n    int // 1-based
	text string
}

// prose returns the lines outside fenced code blocks.
func prose(doc string) []line {
	var out []line
	fenced := false
	for i, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line{i + 1, l})
		}
	}
	return out
}

// headingLevel is the level of a Markdown heading line, 0 for another
// line.
func headingLevel(l string) int {
	n := len(l) - len(strings.TrimLeft(l, "#"))
	if n == 0 || n > 6 || !strings.HasPrefix(l[n:], " ") {
		return 0
	}
	return n
}

// checkLength fails a document over max lines.
func checkLength(doc string, max int) error {
	if n := strings.Count(strings.TrimSuffix(doc, "\n"), "\n") + 1; n > max {
		return fmt.Errorf("%d lines; at most %d (dated runs go to docs/notes)", n, max)
	}
	return nil
}

// badHeadings lists the headings that narrate rather than name a part:
// rounds, branch-like names, branches.
func badHeadings(doc string) []string {
	var bad []string
	for _, l := range prose(doc) {
		if headingLevel(l.text) == 0 {
			continue
		}
		if roundWord.MatchString(l.text) || branchWord.MatchString(l.text) || branchRef.MatchString(l.text) {
			bad = append(bad, fmt.Sprintf("line %d: %s", l.n, l.text))
		}
	}
	return bad
}

// tableDelimiter matches a table's second line, |---|:---:|.
var tableDelimiter = regexp.MustCompile(`^\|(\s*:?-{3,}:?\s*\|)+\s*$`)

// tablesWithoutProvenance lists the tables with no provenance line
// before them in their section: since the last heading of level 1 to 3,
// so that a generated section's own subsections (bench-scale's ####)
// share the line before its markers.
func tablesWithoutProvenance(doc string) []string {
	var bad []string
	lines := prose(doc)
	seen := false
	for i, l := range lines {
		if lv := headingLevel(l.text); lv > 0 && lv <= 3 {
			seen = false
		}
		if provenance.MatchString(l.text) {
			seen = true
		}
		header := strings.HasPrefix(l.text, "|") && i+1 < len(lines) && lines[i+1].n == l.n+1 && tableDelimiter.MatchString(lines[i+1].text)
		if header && !seen {
			bad = append(bad, fmt.Sprintf("line %d: %s", l.n, l.text))
		}
	}
	return bad
}

// checkReadmeOpening fails a README that does not say what llmgw is
// within its first within lines.
func checkReadmeOpening(readme string, within int) error {
	for _, l := range prose(readme) {
		if l.n > within {
			break
		}
		if readmeOpening.MatchString(l.text) {
			return nil
		}
	}
	return fmt.Errorf("no line in the first %d starts with \"llmgw is\" or \"**llmgw** is\"", within)
}

// docSection is one -section a make target writes into a document.
type docSection struct{ doc, section string }

// makeSections finds every `-doc FILE -section NAME` in make files.
var makeSection = regexp.MustCompile(`-doc\s+(\S+)\s+-section\s+(\S+)`)

func makeSections(mk string) []docSection {
	var out []docSection
	for _, m := range makeSection.FindAllStringSubmatch(mk, -1) {
		out = append(out, docSection{m[1], m[2]})
	}
	return out
}

// missingMarkers lists the sections whose marker pair the document lacks
// (llmgw bench's splice needs each once, begin before end).
func missingMarkers(doc string, sections []string) []string {
	var bad []string
	for _, s := range sections {
		begin, end := "<!-- llmgw bench: begin "+s+" -->", "<!-- llmgw bench: end "+s+" -->"
		b, e := strings.Index(doc, begin), strings.Index(doc, end)
		if strings.Count(doc, begin) != 1 || strings.Count(doc, end) != 1 || b > e {
			bad = append(bad, s)
		}
	}
	return bad
}
