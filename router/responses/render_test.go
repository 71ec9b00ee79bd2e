package responses

import (
	"testing"

	"github.com/llmgw/llmgw/router/chattemplate"
)

// dump prints what a chat template receives (the router's tojson prints as
// transformers' does), so a case states the exact conversation and tools
// vLLM hands the template for a Responses request.
const dump = `{% for m in messages %}{{ m | tojson }}
{% endfor %}tools={{ tools | tojson }} gen={{ add_generation_prompt }}` +
	`{% if reasoning_effort is defined %} effort={{ reasoning_effort }}{% endif %}` +
	`{% if enable_thinking is defined %} thinking={{ enable_thinking }}{% endif %}`

func render(t *testing.T, chatBody []byte) string {
	t.Helper()
	tmpl, err := chattemplate.New(dump, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err := chattemplate.ParseRequest(chatBody)
	if err != nil {
		t.Fatalf("ParseRequest(%s): %v", chatBody, err)
	}
	out, err := tmpl.Render(req)
	if err != nil {
		t.Fatalf("Render(%s): %v", chatBody, err)
	}
	return out
}

// TestRenderFollowsVLLM pins what the template receives for a Responses
// request: the messages of construct_input_messages after chat_utils, the
// tools as FunctionDefinition.model_dump() prints them after
// iter_response_function_tool_dicts dumped OpenAI's FunctionTool (name,
// description, parameters, then strict and the extra fields: the
// FunctionTool dump puts its declared strict before any extra field, in
// whatever order the client sent them), reasoning.effort
// without enable_thinking (ResponsesRequest.build_chat_params), and the
// continuation flags.
func TestRenderFollowsVLLM(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, body, want string }{
		{"string input is a user message",
			`{"model":"m","instructions":"be helpful","input":"hello"}`,
			`{"role": "system", "content": "be helpful"}` + "\n" + `{"role": "user", "content": "hello"}` + "\ntools=null gen=True"},
		{"function tools in FunctionDefinition's order",
			`{"model":"m","input":"q","tools":[{"x_extra":1,"strict":true,"parameters":{"type":"object"},"type":"function","name":"get_weather","description":"d"},{"type":"function","name":"now"}]}`,
			`{"role": "user", "content": "q"}` + "\n" +
				`tools=[{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object"}, "strict": true, "x_extra": 1}}, ` +
				`{"type": "function", "function": {"name": "now", "description": null, "parameters": null, "strict": null}}] gen=True`},
		{"hosted tools only render an empty list",
			`{"model":"m","input":"q","tools":[{"type":"web_search"}]}`,
			`{"role": "user", "content": "q"}` + "\ntools=[] gen=True"},
		{"reasoning effort without enable_thinking",
			`{"model":"m","input":"q","reasoning":{"effort":"high"}}`,
			`{"role": "user", "content": "q"}` + "\ntools=null gen=True effort=high"},
		{"an in-progress assistant message is continued",
			`{"model":"m","input":[{"role":"user","content":"q"},{"type":"message","role":"assistant","status":"incomplete","content":[{"type":"output_text","text":"The answer is ("}]}]}`,
			// continue_final_message cuts the output after the final
			// message's content, as transformers does.
			`{"role": "user", "content": "q"}` + "\n" + `{"role": "assistant", "content": "The answer is (`},
		{"a tool round trip",
			`{"model":"m","input":[{"role":"user","content":"q"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\": 1}"},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`,
			`{"role": "user", "content": "q"}` + "\n" +
				`{"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"arguments": {"a": 1}, "name": "f"}, "type": "function"}]}` + "\n" +
				`{"role": "tool", "content": "ok", "tool_call_id": "c1"}` + "\ntools=null gen=True"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := Parse([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			chatBody, err := r.ChatBody()
			if err != nil {
				t.Fatal(err)
			}
			if got := render(t, chatBody); got != tc.want {
				t.Fatalf("rendered\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
