package migrate

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/llmgw/llmgw/router/openai"
)

// FuzzContinue: any body either fails Check with an error, is refused, is
// left alone, or is forwarded as the same object with return_token_ids
// true and gives continuations that are JSON objects with a max_tokens of
// at least 1 when the request bounded its output.
func FuzzContinue(f *testing.F) {
	f.Add([]byte(`{"model":"m","prompt":"p","stream":true,"max_tokens":5}`), false, uint8(2))
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true,"max_completion_tokens":3}`), true, uint8(1))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":"x"}],"stream":true,"continue_final_message":true}`), true, uint8(9))
	f.Add([]byte(`{"prompt":[1,2],"stream":true,"max_tokens":-4,"min_tokens":7}`), false, uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, chat bool, k uint8) {
		kind := openai.Completion
		if chat {
			kind = openai.Chat
		}
		p, r, err := Check(kind, body)
		if err != nil || p == nil {
			if r != nil && (p != nil || r.Detail == "") {
				t.Fatalf("refusal %v with plan %v", r, p)
			}
			return
		}
		checkForward(t, body, p.Forward())
		ids := make([]uint32, k)
		b, r := p.Continue(Progress{PromptIDs: []uint32{1}, IDs: ids, Text: "partial"})
		if r != nil {
			return
		}
		var c map[string]json.RawMessage
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("continuation %s: %v", b, err)
		}
		for _, name := range []string{"max_tokens", "max_completion_tokens"} {
			if raw, ok := c[name]; ok && string(raw) != "null" {
				var n int
				if json.Unmarshal(raw, &n) == nil && n < 1 {
					t.Fatalf("continuation %s has %s %d", b, name, n)
				}
			}
		}
		if kind == openai.Completion {
			var prompt []uint32
			if err := json.Unmarshal(c["prompt"], &prompt); err != nil || len(prompt) != 1+int(k) {
				t.Fatalf("continuation prompt %s; want %d ids", c["prompt"], 1+int(k))
			}
		}
	})
}

// checkForward: fwd holds the fields of body, each the same value, and
// return_token_ids true.
func checkForward(t *testing.T, body, fwd []byte) {
	t.Helper()
	var in, out map[string]json.RawMessage
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if err := json.Unmarshal(fwd, &out); err != nil {
		t.Fatalf("forwarded %s: %v", fwd, err)
	}
	in["return_token_ids"] = json.RawMessage("true")
	if len(in) != len(out) {
		t.Fatalf("forwarded %s has %d fields; body %s has %d", fwd, len(out), body, len(in))
	}
	for k, v := range in {
		var a, b bytes.Buffer
		if json.Compact(&a, v) != nil || json.Compact(&b, out[k]) != nil || a.String() != b.String() {
			t.Fatalf("forwarded %s: %s = %s; body has %s", fwd, k, out[k], v)
		}
	}
}
