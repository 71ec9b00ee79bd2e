package chaos

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestReadStream: how a stream ended, from its SSE body alone.
func TestReadStream(t *testing.T) {
	chunk := `data: {"choices":[{"delta":{"content":"hi"}}]}` + "\n\n"
	for _, c := range []struct {
		name string
		body io.Reader
		want Outcome
	}{
		{"done", strings.NewReader(chunk + "data: [DONE]\n\n"), OK},
		{"error event", strings.NewReader(chunk + `data: {"error":{"message":"replica lost","code":502}}` + "\n\n"), ErrorEvent},
		{"null error is no error", strings.NewReader(`data: {"error":null}` + "\n\ndata: [DONE]\n\n"), OK},
		{"ends without done", strings.NewReader(chunk), Cut},
		{"connection lost", io.MultiReader(strings.NewReader(chunk), iotest.ErrReader(io.ErrUnexpectedEOF)), Cut},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := readStream(c.body)
			if got != c.want || (got == OK) != (err == nil) {
				t.Fatalf("readStream = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// TestParseMigrations reads the succeeded series and nothing else.
func TestParseMigrations(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       int
	}{
		{"series present", "# HELP x\nllmgw_stream_migrations_total{result=\"attempted\"} 9\nllmgw_stream_migrations_total{result=\"succeeded\"} 7\n", 7},
		{"none yet", "llmgw_requests_total 3\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseMigrations(bufio.NewScanner(strings.NewReader(c.text)))
			if err != nil || got != c.want {
				t.Fatalf("parseMigrations = %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

// TestTallyAndMisses: requests count for the window they started in, and
// each missed target is named, the hard ones as such.
func TestTallyAndMisses(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	results := []Result{
		{Start: at(0), Outcome: OK},
		{Start: at(1), Outcome: Failed, Err: "502"},
		{Start: at(2), Stream: true, Outcome: OK},
		{Start: at(3), Stream: true, Outcome: Cut, Err: "EOF"},
		{Start: at(4), Stream: true, Outcome: Hung, Err: "deadline"},
		{Start: at(5), Stream: true, Outcome: ErrorEvent},
		{Start: at(9), Outcome: Failed}, // after the window
	}
	r := Row{Fault: "f", Exact: 6 * time.Second, RouterRSS: [2]int64{100, 111}, PluginRSS: [2]int64{100, 110}}
	r.Tally(results, at(0), at(9))
	if r.Plain != 2 || r.PlainFailed != 1 || r.Streams != 4 || r.StreamsOK != 1 || r.Cut != 1 || r.Hung != 1 || r.ErrorEvents != 1 {
		t.Fatalf("tally: %+v", r)
	}
	if hard := r.HardMisses(); len(hard) != 2 {
		t.Fatalf("hard misses %q; want the failed plain request and the hung stream", hard)
	}
	misses := r.Misses()
	want := []string{"1 plain requests failed", "1 streams hung", "exact routing not back within 5s", "router memory grew over 10 %"}
	if strings.Join(misses, "|") != strings.Join(want, "|") {
		t.Fatalf("misses %q; want %q", misses, want)
	}
	if table := Markdown([]Row{r}); !strings.Contains(table, "| f | 2 | 1 | 4 | 1 |") || !strings.Contains(table, "6.00 s") {
		t.Fatalf("table:\n%s", table)
	}
}

// TestBusy names the replica reading the most streams, and none once
// they end.
func TestBusy(t *testing.T) {
	var l Load
	l.reading("a", 1)
	l.reading("b", 1)
	l.reading("b", 1)
	l.reading("", 1) // no route header: not counted
	if got := l.Busy(); got != "b" {
		t.Fatalf("Busy = %q; want b", got)
	}
	l.reading("a", -1)
	l.reading("b", -1)
	l.reading("b", -1)
	if got := l.Busy(); got != "" {
		t.Fatalf("Busy = %q after every stream ended; want none", got)
	}
}
