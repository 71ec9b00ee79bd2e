package responses

import (
	"encoding/json"
	"testing"
)

func TestStatelessRewritesOnlyWhatItMust(t *testing.T) {
	t.Parallel()
	history := []json.RawMessage{
		json.RawMessage(`{"type":"message","role":"user","content":"first"}`),
		json.RawMessage(`{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"answer","annotations":[]}]}`),
	}
	cases := []struct{ name, body, want string }{
		{"fields rewritten in place, the rest byte-for-byte",
			`{"model":"m", "previous_response_id":"resp_0","input":"next","store":true,"temperature":0.50,"request_id":"x","metadata":{"b":1,"a":2}}`,
			`{"model":"m","input":[` + string(history[0]) + `,` + string(history[1]) + `,{"type":"message","role":"user","content":"next"}],"store":false,"temperature":0.50,"request_id":"resp_new","metadata":{"b":1,"a":2}}`},
		{"missing fields appended",
			"{\n  \"input\": [{\"role\":\"user\",\"content\":\"next\"}],\n  \"model\": \"m\"\n}",
			`{"input":[` + string(history[0]) + `,` + string(history[1]) + `,{"role":"user","content":"next"}],"model": "m","store":false,"request_id":"resp_new"}`},
		{"an escaped key keeps its bytes",
			`{"mo\u0064el":"m","input":"next"}`,
			`{"mo\u0064el":"m","input":[` + string(history[0]) + `,` + string(history[1]) + `,{"type":"message","role":"user","content":"next"}],"store":false,"request_id":"resp_new"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := Parse([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Stateless(history, "resp_new")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("Stateless\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestStatelessRoundTrips checks that the rewritten body parses to the
// same request with the history in front, and that it converts to the
// chat body of one request holding the whole conversation.
func TestStatelessRoundTrips(t *testing.T) {
	t.Parallel()
	first := `{"model":"m","instructions":"sys","input":[{"role":"user","content":"q1"}],"tools":[{"type":"function","name":"f"}],"previous_response_id":"resp_0","max_output_tokens":9}`
	r, err := Parse([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	history := []json.RawMessage{
		json.RawMessage(`{"role":"user","content":"q0"}`),
		json.RawMessage(`{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}`),
		json.RawMessage(`{"type":"function_call_output","call_id":"c","output":"r"}`),
	}
	out, err := r.Stateless(history, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(out)
	if err != nil {
		t.Fatalf("Parse(Stateless): %v", err)
	}
	if again.PreviousResponseID != "" || again.Store || again.Model != "m" || again.Instructions != "sys" || again.MaxOutputTokens != 9 {
		t.Fatalf("Parse(Stateless) = %+v", again)
	}
	if len(again.Input) != 4 {
		t.Fatalf("Input has %d items, want the 3 of history and 1 of the request", len(again.Input))
	}
	whole := `{"model":"m","instructions":"sys","input":[{"role":"user","content":"q0"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"},{"role":"user","content":"q1"}],"tools":[{"type":"function","name":"f"}],"max_output_tokens":9}`
	want, err := Parse([]byte(whole))
	if err != nil {
		t.Fatal(err)
	}
	gotChat, err := again.ChatBody()
	if err != nil {
		t.Fatal(err)
	}
	wantChat, err := want.ChatBody()
	if err != nil {
		t.Fatal(err)
	}
	if string(gotChat) != string(wantChat) {
		t.Fatalf("ChatBody(Stateless)\n got %s\nwant %s", gotChat, wantChat)
	}
	var req struct {
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(out, &req); err != nil || req.RequestID != "resp_1" {
		t.Fatalf("request_id = %q (%v), want resp_1", req.RequestID, err)
	}
}
