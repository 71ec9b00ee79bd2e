package chattemplate

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type renderCase struct {
	Template     string  `json:"template"`
	Conversation string  `json:"conversation"`
	Text         *string `json:"text"`
	Error        string  `json:"error"`
}

type renderGolden struct {
	Oracle          string            `json:"oracle"`
	FixedNow        string            `json:"fixed_now"`
	DefaultSpecials map[string]string `json:"default_specials"`
	Formats         map[string]string `json:"formats"` // vLLM's content format per template
	Cases           []renderCase      `json:"cases"`
}

// knownMismatches lists the template × conversation cases where this
// package's output differs from Jinja2, with the reason. Each must still
// differ (so the list stays honest).
var knownMismatches = map[string]string{
	"library/llama3.2-vision:90b × tools":    pyRepr,
	"library/llama3.2-vision:latest × tools": pyRepr,
	"library/llama4:latest × tools":          pyRepr,
}

// pyRepr: these templates print a user message's content raw, and vLLM
// hands them list content (they loop over content elsewhere), so Jinja2
// prints Python's repr of the list. Python quotes a string holding an
// apostrophe with double quotes; the engine always uses single quotes.
const pyRepr = "the engine's repr of a list quotes \"What's\" with single quotes, Python with double quotes"

func testdataDir() string {
	if d := os.Getenv("LLMGW_TESTDATA"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "llmgw", "testdata")
}

// goldenTemplates returns every template the golden file covers, keyed as
// render.py names them.
func goldenTemplates(t *testing.T, g renderGolden) map[string]*Template {
	t.Helper()
	dir := testdataDir()
	raw, err := os.ReadFile(filepath.Join(dir, "templates.json"))
	if os.IsNotExist(err) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s/templates.json is absent in CI: `make test` runs `make testdata` first", dir)
		}
		t.Skipf("%s/templates.json is absent: run `make testdata` (or set LLMGW_TESTDATA)", dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	var sources map[string]string
	if err := json.Unmarshal(raw, &sources); err != nil {
		t.Fatal(err)
	}
	now, err := time.Parse("2006-01-02T15:04:05", g.FixedNow)
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return now }
	out := map[string]*Template{}
	for name, src := range sources {
		tmpl, err := New(src, g.DefaultSpecials)
		if err != nil {
			t.Errorf("compile %s: %v", name, err)
			continue
		}
		out[name] = tmpl.WithClock(clock)
	}
	for _, m := range []string{"llama3", "llama3_1", "qwen3", "gemma3", "deepseek_v3"} {
		tmpl, err := Load(filepath.Join(dir, "models", m))
		if err != nil {
			t.Errorf("Load %s: %v", m, err)
			continue
		}
		out["model/"+m] = tmpl.WithClock(clock)
	}
	return out
}

func readRenderGolden(t *testing.T) renderGolden {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "renders.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var g renderGolden
	if err := json.NewDecoder(zr).Decode(&g); err != nil {
		t.Fatal(err)
	}
	return g
}

func readConversations(t *testing.T) map[string]Request {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var convs []json.RawMessage
	if err := json.Unmarshal(raw, &convs); err != nil {
		t.Fatal(err)
	}
	out := map[string]Request{}
	for _, c := range convs {
		var n struct{ Name string }
		if err := json.Unmarshal(c, &n); err != nil {
			t.Fatal(err)
		}
		req, err := ParseRequest(c)
		if err != nil {
			t.Fatalf("conversation %s: %v", n.Name, err)
		}
		out[n.Name] = req
	}
	return out
}

func TestGoldenRenders(t *testing.T) {
	t.Parallel()
	g := readRenderGolden(t)
	templates := goldenTemplates(t, g)
	convs := readConversations(t)
	comparable, same := 0, 0
	for _, c := range g.Cases {
		if c.Text == nil {
			continue // Jinja2 raised; a lenient render is harmless
		}
		comparable++
		key := c.Template + " × " + c.Conversation
		tmpl, req := templates[c.Template], convs[c.Conversation]
		if tmpl == nil {
			t.Errorf("%s: template did not compile", key)
			continue
		}
		got, err := tmpl.Render(req)
		reason, known := knownMismatches[key]
		switch {
		case err == nil && got == *c.Text:
			same++
			if known {
				t.Errorf("%s: listed as a known mismatch (%s) but now matches; remove it", key, reason)
			}
		case known:
		case err != nil:
			t.Errorf("%s: Render: %v", key, err)
		default:
			t.Errorf("%s: render differs from Jinja2\n got %q\nwant %q", key, got, *c.Text)
		}
	}
	t.Logf("%d of %d comparable renders identical to %s", same, comparable, g.Oracle)
	if comparable < 540 {
		t.Errorf("only %d comparable cases; want at least 90 templates × 6 conversations", comparable)
	}
	if same*100 < comparable*99 {
		t.Errorf("%d of %d identical; want at least 99%%", same, comparable)
	}
}

// TestContentFormatMatchesVLLM checks detectFormat, which reads the template
// text, against the content format render.py finds on the Jinja2 syntax
// tree the way vLLM does, for every golden template.
func TestContentFormatMatchesVLLM(t *testing.T) {
	t.Parallel()
	g := readRenderGolden(t)
	templates := goldenTemplates(t, g)
	if len(g.Formats) < 100 {
		t.Fatalf("the golden file names %d formats; want one per template (100)", len(g.Formats))
	}
	names := map[contentFormat]string{stringContent: "string", openaiContent: "openai"}
	for name, want := range g.Formats {
		tmpl := templates[name]
		if tmpl == nil {
			t.Errorf("%s: template did not compile", name)
			continue
		}
		if got := names[tmpl.def.format]; got != want {
			t.Errorf("%s: content format %s; vLLM's detection gives %s", name, got, want)
		}
	}
}
