package report

import (
	"fmt"
	"strings"
)

// Markers delimit a generated section of docs/BENCHMARKS.md, one pair per
// section name; Splice replaces what lies between them and keeps the rest
// of the file.
func Markers(section string) (begin, end string) {
	return "<!-- llmgw bench: begin " + section + " -->", "<!-- llmgw bench: end " + section + " -->"
}

// Splice returns doc with the text between the named section's markers
// replaced by text. Both markers must appear once, in order.
func Splice(doc, section, text string) (string, error) {
	begin, end := Markers(section)
	if strings.Count(doc, begin) != 1 || strings.Count(doc, end) != 1 {
		return "", fmt.Errorf("the document needs exactly one %q and one %q line", begin, end)
	}
	before, rest, _ := strings.Cut(doc, begin)
	_, after, found := strings.Cut(rest, end)
	if !found {
		return "", fmt.Errorf("%q comes before %q", end, begin)
	}
	return before + begin + "\n" + strings.TrimSpace(text) + "\n" + end + after, nil
}
