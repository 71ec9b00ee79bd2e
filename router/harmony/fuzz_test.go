package harmony

import (
	"errors"
	"strings"
	"testing"
)

// FuzzRenderChat feeds arbitrary request bodies to the renderer: it never
// panics, fails only with ErrUnsupported, renders the same body the same
// way, and every prompt opens with the system message and ends with the
// assistant's turn.
func FuzzRenderChat(f *testing.F) {
	f.Add(`{"messages":[{"role":"user","content":"Hi"}]}`)
	f.Add(`{"reasoning_effort":"low","messages":[{"role":"system","content":"x"},{"role":"user","content":[{"type":"text","text":"a"}]}]}`)
	f.Add(`{"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"type":["number","null"]}],"default":1.5e300}}}}}],"messages":[]}`)
	f.Add(`{"messages":[{"role":"assistant","reasoning":"r","tool_calls":[{"id":"1","function":{"name":"f","arguments":null}}]},{"role":"tool","tool_call_id":"1","content":null}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		got, err := RenderChat([]byte(body), Options{Date: "2026-01-02"})
		if err != nil {
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error %v is not ErrUnsupported", err)
			}
			return
		}
		if !strings.HasPrefix(got, TokStart+RoleSystem+TokMessage) || !strings.HasSuffix(got, TokStart+RoleAssistant) {
			t.Fatalf("rendered %q", got)
		}
		again, err := RenderChat([]byte(body), Options{Date: "2026-01-02"})
		if err != nil || again != got {
			t.Fatalf("second render differs: %q, %v", again, err)
		}
	})
}
