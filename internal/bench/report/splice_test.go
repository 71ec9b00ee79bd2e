package report

import (
	"strings"
	"testing"
)

func TestSplice(t *testing.T) {
	doc := "# Benchmarks\n\nintro\n" + BeginMarker + "\nold table\n" + EndMarker + "\n\n## Other\nkept\n"
	got, err := Splice(doc, "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\nintro\n" + BeginMarker + "\nnew table\n" + EndMarker + "\n\n## Other\nkept\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	again, _ := Splice(got, "new table")
	if again != got {
		t.Error("splicing the same section twice changed the document")
	}
	for name, bad := range map[string]string{
		"no markers":       "# Benchmarks\n",
		"only begin":       BeginMarker + "\n",
		"two begins":       BeginMarker + BeginMarker + EndMarker,
		"end before begin": EndMarker + "\n" + BeginMarker + "\n",
	} {
		if _, err := Splice(bad, "x"); err == nil || !strings.Contains(err.Error(), "llmgw bench") {
			t.Errorf("%s: got %v; want an error naming the markers", name, err)
		}
	}
}
