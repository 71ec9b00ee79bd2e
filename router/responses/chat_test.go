package responses

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/router/openai"
)

// chatCase is a Responses body and the chat body vLLM's conversion amounts
// to. The messages are those vLLM's construct_input_messages builds
// (vllm/entrypoints/openai/responses/utils.py and its tests in
// tests/entrypoints/openai/responses/test_responses_utils.py, both at
// 01ca842df5b1ddd7f91aa376294040d126a453f2); the case names follow the
// vLLM tests they take their vectors from.
type chatCase struct {
	name, body, want string
}

// Items as vLLM's test helpers build them (make_output_message,
// make_reasoning_item, make_function_call, make_function_call_output),
// in their JSON form.
const (
	outHello   = `{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hello","annotations":[]}]}`
	outWorld   = `{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"World","annotations":[]}]}`
	think      = `{"id":"reasoning_1","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"Let me think"}]}`
	thinkMore  = `{"id":"reasoning_1","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"Let me think more"}]}`
	call123    = `{"type":"function_call","id":"tool_id","call_id":"call_123","name":"test_function","arguments":"{}"}`
	call456    = `{"type":"function_call","id":"tool_id","call_id":"call_456","name":"test_function","arguments":"{}"}`
	output123  = `{"type":"function_call_output","id":"output_1","call_id":"call_123","output":"42","status":"completed"}`
	wantCall1  = `{"id":"call_123","function":{"name":"test_function","arguments":"{}"},"type":"function"}`
	wantCall2  = `{"id":"call_456","function":{"name":"test_function","arguments":"{}"},"type":"function"}`
	wantOutput = `{"role":"tool","content":"42","tool_call_id":"call_123"}`
)

func body(input string) string { return `{"model":"m","input":` + input + `}` }

func chat(messages string) string { return `{"model":"m","messages":` + messages + `}` }

// stringInput is the item a string input becomes. vLLM appends
// {"role":"user","content":...} for it; the chat path drops the extra
// type key (vLLM's _parse_chat_message_content keeps only the fields it
// knows), so both render alike (TestStringInputRendersAsVLLMs).
func stringInput(text string) string {
	return `{"type":"message","role":"user","content":"` + text + `"}`
}

// itemCases pin each input item kind and vLLM's merging of assistant-side
// items.
func itemCases() []chatCase {
	return []chatCase{
		{"test_no_prev_msg: instructions, then a string input", `{"model":"m","instructions":"be helpful","input":"hello"}`,
			chat(`[{"role":"system","content":"be helpful"},` + stringInput("hello") + `]`)},
		{"empty instructions add no system message", `{"model":"m","instructions":"","input":"hello"}`,
			chat(`[` + stringInput("hello") + `]`)},
		{"user message with input_text parts passes through", body(`[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]`),
			chat(`[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]`)},
		{"developer and system messages pass through", body(`[{"role":"developer","content":"d"},{"role":"system","content":"s"}]`),
			chat(`[{"role":"developer","content":"d"},{"role":"system","content":"s"}]`)},
		{"output message as input: its first part's text", body(`[{"id":"msg_bf585bbbe3d500e0","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"dongyi","annotations":[]},{"type":"output_text","text":"dropped","annotations":[]}]}]`),
			chat(`[{"role":"assistant","content":"dongyi"}]`)},
		{"output message with empty content is empty text", body(`[{"id":"msg_empty_content","type":"message","role":"assistant","status":"completed","content":[]}]`),
			chat(`[{"role":"assistant","content":""}]`)},
		{"function_call_output dict is a tool message", body(`[{"type":"function_call_output","call_id":"temp_dict","output":"5678"}]`),
			chat(`[{"role":"tool","content":"5678","tool_call_id":"temp_dict"}]`)},
		{"test_construct_chat_messages_with_tool_call: reasoning then a call merge", body(`[{"id":"lol","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"Leroy Jenkins"}]},{"id":"mcp_123","call_id":"call_123","type":"function_call","status":"completed","name":"python","arguments":"{\"code\": \"123+456\"}"}]`),
			chat(`[{"role":"assistant","reasoning":"Leroy Jenkins","tool_calls":[{"id":"call_123","function":{"name":"python","arguments":"{\"code\": \"123+456\"}"},"type":"function"}]}]`)},
		{"test_summary_fallback_when_content_empty", body(`[{"id":"reasoning_4","type":"reasoning","summary":[{"type":"summary_text","text":"Summary when content empty"}],"content":[]}]`),
			chat(`[{"role":"assistant","reasoning":"Summary when content empty"}]`)},
		{"test_content_preferred_over_summary", body(`[{"id":"reasoning_1","type":"reasoning","summary":[{"type":"summary_text","text":"This is a summary"}],"content":[{"type":"reasoning_text","text":"This is the actual content"}]}]`),
			chat(`[{"role":"assistant","reasoning":"This is the actual content"}]`)},
		{"test_neither_content_nor_summary", body(`[{"id":"reasoning_5","type":"reasoning","summary":[]}]`),
			chat(`[{"role":"assistant","reasoning":""}]`)},
		{"namespaced call renders namespace__name", body(`[{"type":"function_call","call_id":"c","namespace":"crm","name":"lookup","arguments":"{}"}]`),
			chat(`[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"crm__lookup","arguments":"{}"},"type":"function"}]}]`)},
	}
}

// mergeCases are TestConstructChatMessagesCombinePolicy's.
func mergeCases() []chatCase {
	return []chatCase{
		{"reasoning-output-messages", body(`[` + think + `,` + outHello + `]`),
			chat(`[{"role":"assistant","reasoning":"Let me think","content":"Hello"}]`)},
		{"consecutive-tool-calls", body(`[` + call123 + `,` + call456 + `]`),
			chat(`[{"role":"assistant","tool_calls":[` + wantCall1 + `,` + wantCall2 + `]}]`)},
		{"reasoning-tool-call", body(`[` + think + `,` + call123 + `]`),
			chat(`[{"role":"assistant","reasoning":"Let me think","tool_calls":[` + wantCall1 + `]}]`)},
		{"output-tool-call", body(`[` + outHello + `,` + call123 + `]`),
			chat(`[{"role":"assistant","content":"Hello","tool_calls":[` + wantCall1 + `]}]`)},
		{"reasoning-output-tool-call", body(`[{"id":"r","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"Thinking"}]},` + outHello + `,` + call123 + `,` + call456 + `]`),
			chat(`[{"role":"assistant","reasoning":"Thinking","content":"Hello","tool_calls":[` + wantCall1 + `,` + wantCall2 + `]}]`)},
		{"reasoning-easyinput-assistant", body(`[` + think + `,{"type":"message","role":"assistant","content":"Hello"}]`),
			chat(`[{"role":"assistant","reasoning":"Let me think","content":"Hello"}]`)},
		{"consecutive-output-messages", body(`[` + outHello + `,` + outWorld + `]`),
			chat(`[{"role":"assistant","content":"Hello"},{"role":"assistant","content":"World"}]`)},
		{"consecutive-reasoning-messages", body(`[` + think + `,` + thinkMore + `]`),
			chat(`[{"role":"assistant","reasoning":"Let me think"},{"role":"assistant","reasoning":"Let me think more"}]`)},
		{"interrupted-by-non-assistant-item", body(`[` + call123 + `,` + output123 + `,` + call456 + `]`),
			chat(`[{"role":"assistant","tool_calls":[` + wantCall1 + `]},` + wantOutput + `,{"role":"assistant","tool_calls":[` + wantCall2 + `]}]`)},
		{"instructions never take merged items", `{"model":"m","instructions":"sys","input":[` + call123 + `]}`,
			chat(`[{"role":"system","content":"sys"},{"role":"assistant","tool_calls":[` + wantCall1 + `]}]`)},
	}
}

// fieldCases pin the request fields besides the input that reach the chat
// body: tools (construct_tool_dicts), the continuation flags
// (should_continue_final_message, build_chat_params), reasoning effort,
// and what shapes the key.
func fieldCases() []chatCase {
	user := `[` + stringInput("q") + `]`
	return []chatCase{
		{"test_dict_in_progress_message_returns_true: continue the final message", body(`[{"role":"user","content":"q"},{"id":"msg_123","type":"message","role":"assistant","status":"in_progress","content":[{"type":"output_text","text":"The answer is ("}]}]`),
			`{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"The answer is ("}],"add_generation_prompt":false,"continue_final_message":true}`},
		{"test_dict_reasoning_in_progress_returns_true", body(`[{"id":"reasoning_123","type":"reasoning","status":"incomplete","summary":[],"content":[{"type":"reasoning_text","text":"Let me think..."}]}]`),
			`{"model":"m","messages":[{"role":"assistant","reasoning":"Let me think..."}],"add_generation_prompt":false,"continue_final_message":true}`},
		{"test_tool_call_returns_false", body(`[{"id":"msg_123","call_id":"call_123","type":"function_call","status":"in_progress","name":"get_weather","arguments":"{}"}]`),
			chat(`[{"role":"assistant","tool_calls":[{"id":"call_123","function":{"name":"get_weather","arguments":"{}"},"type":"function"}]}]`)},
		{"function tools become chat tools, strict always present", `{"model":"m","input":"q","tools":[{"type":"function","name":"get_weather","description":"d","parameters":{"type":"object"},"strict":true,"x_extra":1},{"type":"function","name":"now"},{"type":"web_search"}],"tool_choice":{"type":"function","name":"now"}}`,
			`{"model":"m","messages":` + user + `,"tools":[{"type":"function","function":{"strict":true,"name":"get_weather","description":"d","parameters":{"type":"object"},"x_extra":1}},{"type":"function","function":{"strict":null,"name":"now"}}],"tool_choice":{"type":"function","function":{"name":"now"}}}`},
		{"namespace tools flatten to namespace__name", `{"model":"m","input":"q","tools":[{"type":"namespace","name":"crm","tools":[{"type":"function","name":"lookup"},{"type":"custom","name":"skip"}]}],"tool_choice":"none"}`,
			`{"model":"m","messages":` + user + `,"tools":[{"type":"function","function":{"strict":null,"name":"crm__lookup"}}],"tool_choice":"none"}`},
		{"hosted tools only: an empty tool list", `{"model":"m","input":"q","tools":[{"type":"web_search"}]}`,
			`{"model":"m","messages":` + user + `,"chat_template_kwargs":{"tools":[]}}`},
		{"reasoning effort is a template variable", `{"model":"m","input":"q","reasoning":{"effort":"low"},"chat_template_kwargs":{"enable_thinking":false}}`,
			`{"model":"m","messages":` + user + `,"chat_template_kwargs":{"reasoning_effort":"low"}}`},
		{"max tokens, stream, salt and truncation", `{"model":"m","input":"q","max_output_tokens":64,"stream":true,"cache_salt":"s","truncation":"auto"}`,
			`{"model":"m","messages":` + user + `,"max_tokens":64,"stream":true,"cache_salt":"s","truncate_prompt_tokens":-1}`},
	}
}

func TestChatBodyFollowsVLLM(t *testing.T) {
	t.Parallel()
	cases := append(append(itemCases(), mergeCases()...), fieldCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := Parse([]byte(tc.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := r.ChatBody()
			if err != nil {
				t.Fatalf("ChatBody: %v", err)
			}
			if !jsonEqual(t, got, []byte(tc.want)) {
				t.Fatalf("ChatBody\n got %s\nwant %s", got, tc.want)
			}
			if _, err := openai.Parse(openai.Chat, got); err != nil {
				t.Fatalf("openai.Parse(ChatBody): %v", err)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("unmarshal %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}
