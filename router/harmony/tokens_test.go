package harmony

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/tokenizer"
)

// gptoss loads the gpt-oss tokenizer.json from the test data (make
// testdata), skipping when it is absent outside CI.
func gptoss(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	dir := os.Getenv("LLMGW_TESTDATA")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "llmgw", "testdata")
	}
	dir = filepath.Join(dir, "models", "gptoss")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s/tokenizer.json is absent in CI", dir)
		}
		t.Skipf("%s/tokenizer.json is absent: run `make testdata` (or set LLMGW_TESTDATA)", dir)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// specialIDs are the formatting tokens' ids in o200k_harmony (openai/harmony
// src/tiktoken_ext/public_encodings.rs; the same in gpt-oss's tokenizer.json).
var specialIDs = map[string]uint32{
	TokReturn: 200002, TokConstrain: 200003, TokChannel: 200005, TokStart: 200006,
	TokEnd: 200007, TokMessage: 200008, TokCall: 200012,
}

// TestTokenIDs encodes a rendered tool call with the gpt-oss tokenizer. The
// ids are those of openai/harmony's test_simple_tool_call
// (src/tests.rs), in the order Render<Message> writes the header: role,
// recipient, channel, content type.
func TestTokenIDs(t *testing.T) {
	tok := gptoss(t)
	for s, id := range specialIDs {
		if got, ok := tok.TokenID(s); !ok || got != id {
			t.Errorf("TokenID(%s) = %d, %v; want %d", s, got, ok, id)
		}
	}
	var b strings.Builder
	m := Message{Role: RoleAssistant, Recipient: "lookup_weather", Channel: "analysis", ContentType: "code", Text: `{"location": "Tokyo"}`}
	if err := renderMessage(&b, m, false); err != nil {
		t.Fatal(err)
	}
	want := []uint32{200006, 173781, 316, 28, 29712, 170154, 200005, 35644, 3490, 200008,
		10848, 7693, 1243, 392, 173844, 18583, 200012}
	if got := tok.Encode(b.String(), false); !slices.Equal(got, want) {
		t.Errorf("Encode(%q)\n got %v\nwant %v", b.String(), got, want)
	}
}

// TestTokensPiecewise checks that encoding a whole rendered prompt gives
// the ids Harmony builds: one id per formatting token and the text between
// them encoded on its own.
func TestTokensPiecewise(t *testing.T) {
	tok := gptoss(t)
	bodies := []string{
		`{"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi there"}]}`,
		`{"reasoning_effort":"high","tools":[{"type":"function","function":{"name":"f","description":"Does f.","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}}],` +
			`"messages":[{"role":"user","content":"call f"},{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f","arguments":"{\"x\":1}"}}]},{"role":"tool","tool_call_id":"1","content":"ok"}]}`,
	}
	for _, body := range bodies {
		text, err := RenderChat([]byte(body), Options{Date: "2026-01-02"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := tok.Encode(text, false), piecewise(tok, text); !slices.Equal(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", body, got, want)
		}
	}
}

// piecewise encodes text as the library does: formatting tokens by id,
// the text between them alone.
func piecewise(tok *tokenizer.Tokenizer, text string) []uint32 {
	var ids []uint32
	for text != "" {
		next, tokLen, id := len(text), 0, uint32(0)
		for s, sid := range specialIDs {
			if i := strings.Index(text, s); i >= 0 && i < next {
				next, tokLen, id = i, len(s), sid
			}
		}
		ids = append(ids, tok.Encode(text[:next], false)...)
		if tokLen == 0 {
			break
		}
		ids = append(ids, id)
		text = text[next+tokLen:]
	}
	return ids
}
