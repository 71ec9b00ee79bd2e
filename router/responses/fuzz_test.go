package responses

import (
	"encoding/json"
	"testing"

	"github.com/llmgw/llmgw/router/openai"
)

// FuzzParse checks that Parse, ChatBody and Stateless never panic, that a
// chat body always parses as a chat request, and that a stateless body
// parses again with previous_response_id gone and store false.
func FuzzParse(f *testing.F) {
	seeds := []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","instructions":"s","input":[{"role":"user","content":[{"type":"input_text","text":"x"}]},{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"r"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"},{"type":"message","role":"assistant","status":"in_progress","content":[{"type":"output_text","text":"a"}]}]}`,
		`{"model":"m","input":"q","tools":[{"type":"function","name":"f","strict":true},{"type":"namespace","name":"n","tools":[{"type":"function","name":"g"}]},{"type":"web_search"}],"tool_choice":{"type":"function","name":"f"},"reasoning":{"effort":"low"}}`,
		`{"model":"m","input":[],"previous_response_id":"r","store":null,"cache_salt":"s","truncation":"auto","max_output_tokens":5}`,
		`{"model":"m","input":[{"role":"user","content":null}]}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Parse(body)
		if err != nil {
			return
		}
		if chat, err := r.ChatBody(); err == nil {
			if _, err := openai.Parse(openai.Chat, chat); err != nil {
				t.Fatalf("ChatBody %s does not parse as a chat request: %v", chat, err)
			}
		}
		history := []json.RawMessage{json.RawMessage(`{"role":"user","content":"h"}`)}
		out, err := r.Stateless(history, "resp_x")
		if err != nil {
			t.Fatalf("Stateless of a parsed request failed: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			if r.Background {
				return // store false now refuses background, as vLLM would
			}
			t.Fatalf("Parse(Stateless) = %v for %s", err, out)
		}
		if again.PreviousResponseID != "" || again.Store || len(again.Input) != len(r.Input)+1 {
			t.Fatalf("Stateless %s kept state: %+v", out, again)
		}
	})
}

// FuzzReadStreamEvent checks that reading an event never panics and that
// a final event always gives a result with an id.
func FuzzReadStreamEvent(f *testing.F) {
	f.Add([]byte(`{"type":"response.completed","response":{"id":"r","status":"completed","output":[],"usage":{"input_tokens":1,"output_tokens":2,"input_tokens_details":{"cached_tokens":0}}}}`))
	f.Add([]byte(`{"type":"response.output_text.delta","delta":"x"}`))
	f.Add([]byte(`{"type":"response.failed","response":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, final, err := ReadStreamEvent(data)
		if err != nil && (final || res != nil) {
			t.Fatalf("an error came with a result: %+v %v", res, final)
		}
		if final && (res == nil || res.ID == "") {
			t.Fatalf("a final event gave %+v", res)
		}
	})
}
