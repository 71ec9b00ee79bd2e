package report

import (
	"strings"
	"testing"
)

func TestSplice(t *testing.T) {
	b, e := Markers("chat")
	ob, oe := Markers("trace")
	doc := "# Benchmarks\n\nintro\n" + b + "\nold table\n" + e + "\n\n## Other\n" + ob + "\nkept\n" + oe + "\n"
	got, err := Splice(doc, "chat", "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\nintro\n" + b + "\nnew table\n" + e + "\n\n## Other\n" + ob + "\nkept\n" + oe + "\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	again, _ := Splice(got, "chat", "new table")
	if again != got {
		t.Error("splicing the same section twice changed the document")
	}
	for name, bad := range map[string]string{
		"no markers":       "# Benchmarks\n",
		"only begin":       b + "\n",
		"two begins":       b + b + e,
		"end before begin": e + "\n" + b + "\n",
		"other section":    ob + oe,
	} {
		if _, err := Splice(bad, "chat", "x"); err == nil || !strings.Contains(err.Error(), "llmgw bench: begin chat") {
			t.Errorf("%s: got %v; want an error naming the markers", name, err)
		}
	}
}
