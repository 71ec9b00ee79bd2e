package report

import (
	"fmt"
	"strings"
)

// Markers delimit the generated section of docs/BENCHMARKS.md; Splice
// replaces what lies between them and keeps the rest of the file.
const (
	BeginMarker = "<!-- llmgw bench: begin generated section -->"
	EndMarker   = "<!-- llmgw bench: end generated section -->"
)

// Splice returns doc with the text between the markers replaced by
// section. Both markers must appear once, in order.
func Splice(doc, section string) (string, error) {
	if strings.Count(doc, BeginMarker) != 1 || strings.Count(doc, EndMarker) != 1 {
		return "", fmt.Errorf("the document needs exactly one %q and one %q line", BeginMarker, EndMarker)
	}
	before, rest, _ := strings.Cut(doc, BeginMarker)
	_, after, found := strings.Cut(rest, EndMarker)
	if !found {
		return "", fmt.Errorf("%q comes before %q", EndMarker, BeginMarker)
	}
	return before + BeginMarker + "\n" + strings.TrimSpace(section) + "\n" + EndMarker + after, nil
}
