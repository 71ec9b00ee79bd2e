package docs

import (
	"strings"
	"testing"
)

const good = "Command: `make bench-kv` · Date: 2026-11-29 · Commit: 6c1f98d · Conditions: load 1"

func TestCheckLength(t *testing.T) {
	tests := []struct {
		doc  string
		max  int
		fail bool
	}{
		{"a\nb\nc\n", 3, false},
		{"a\nb\nc", 3, false},
		{"a\nb\nc\nd\n", 3, true},
	}
	for _, tt := range tests {
		if err := checkLength(tt.doc, tt.max); (err != nil) != tt.fail {
			t.Errorf("checkLength(%q, %d) = %v; want failure %v", tt.doc, tt.max, err, tt.fail)
		}
	}
}

func TestBadHeadings(t *testing.T) {
	tests := []struct {
		doc string
		bad int
	}{
		{"## Router: gateway\n### Tenancy\n", 0},
		{"### Round 2 (2026-11-29)\n", 1},
		{"### After the second round\n", 1},
		{"### Chunked sets (`index3`)\n", 1},
		{"### Interned sets (branch `index`)\n", 1},
		{"## Blocks of layout v2 on one H100, Llama 3.1\n", 0},
		{"## Rounding of figures\n", 0},
		{"```\n# round 3 in a code block\n```\n", 0},
		{"Round 3 in prose is not a heading\n", 0},
	}
	for _, tt := range tests {
		if got := badHeadings(tt.doc); len(got) != tt.bad {
			t.Errorf("badHeadings(%q) = %q; want %d", tt.doc, got, tt.bad)
		}
	}
}

func TestTablesWithoutProvenance(t *testing.T) {
	table := "| a | b |\n|---|---:|\n| 1 | 2 |\n"
	tests := []struct {
		name string
		doc  string
		bad  int
	}{
		{"line before the table", "## S\n\n" + good + "\n\n" + table, 0},
		{"no line", "## S\n\nSome prose.\n\n" + table, 1},
		{"the line lacks a commit", "## S\n\nCommand: `x` · Date: 2026-11-29 · Conditions: y\n\n" + table, 1},
		{"the line lacks a date", "## S\n\nCommand: `x` · Commit: 6c1f98d · Conditions: y\n\n" + table, 1},
		{"a section's line does not cover the next section", "## S\n\n" + good + "\n\n## T\n\n" + table, 1},
		{"a level-4 subsection shares its section's line", "## S\n\n" + good + "\n\n#### Sub\n\n" + table + "\n#### Sub 2\n\n" + table, 0},
		{"a table in a code block is not one", "## S\n\n```\n" + table + "```\n", 0},
		{"the line after the table does not count", "## S\n\n" + table + "\n" + good + "\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tablesWithoutProvenance(tt.doc); len(got) != tt.bad {
				t.Errorf("tablesWithoutProvenance = %q; want %d", got, tt.bad)
			}
		})
	}
}

func TestCheckReadmeOpening(t *testing.T) {
	tests := []struct {
		name   string
		readme string
		fail   bool
	}{
		{"plain", "# llmgw\n\nllmgw is a gateway.\n", false},
		{"bold", "# llmgw\n\n**llmgw** is a gateway.\n", false},
		{"too late", "# llmgw\n" + strings.Repeat("\n", 15) + "llmgw is a gateway.\n", true},
		{"never says", "# llmgw\n\n```sh\nmake demo\n```\n", true},
		{"a command is not a description", "# llmgw\n\nllmgw demo runs the demo.\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkReadmeOpening(tt.readme, 15); (err != nil) != tt.fail {
				t.Errorf("checkReadmeOpening = %v; want failure %v", err, tt.fail)
			}
		})
	}
}

func TestMakeSectionsAndMarkers(t *testing.T) {
	mk := "x:\n\t./bin/llmgw bench -out d -doc docs/BENCHMARKS.md -section sweep-a\n\t./bin/llmgw bench -out e -doc docs/B.md  -section b\n\t./bin/llmgw bench -out f\n"
	got := makeSections(mk)
	if len(got) != 2 || got[0] != (docSection{"docs/BENCHMARKS.md", "sweep-a"}) || got[1] != (docSection{"docs/B.md", "b"}) {
		t.Fatalf("makeSections = %+v; want sweep-a in docs/BENCHMARKS.md and b in docs/B.md", got)
	}
	pair := func(s string) string {
		return "<!-- llmgw bench: begin " + s + " -->\nx\n<!-- llmgw bench: end " + s + " -->\n"
	}
	tests := []struct {
		name string
		doc  string
		bad  int
	}{
		{"present", pair("a"), 0},
		{"absent", "nothing\n", 1},
		{"twice", pair("a") + pair("a"), 1},
		{"end before begin", "<!-- llmgw bench: end a -->\n<!-- llmgw bench: begin a -->\n", 1},
		{"another section's pair", pair("ab"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := missingMarkers(tt.doc, []string{"a"}); len(got) != tt.bad {
				t.Errorf("missingMarkers = %q; want %d", got, tt.bad)
			}
		})
	}
}

func TestNoteName(t *testing.T) {
	for name, ok := range map[string]bool{
		"2026-12-02-rate-sweeps.md": true,
		"2026-12-02.md":             false,
		"rate-sweeps.md":            false,
		"2026-12-02-Rate Sweeps.md": false,
	} {
		if noteName.MatchString(name) != ok {
			t.Errorf("noteName(%q) = %v; want %v", name, !ok, ok)
		}
	}
}
