package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/openai"
)

// The vectors below follow vLLM's bridge, vllm/entrypoints/anthropic/
// serving.py @ 0001948bc76939369ca855c90b36d81256477e85, and where noted
// the cases of tests/entrypoints/anthropic/
// test_anthropic_messages_conversion.py @ 017ad415dee415ffef1431b820fbeca779c5a779
// whose behaviour that serving.py shares.

func chatOf(t *testing.T, body string) map[string]json.RawMessage {
	t.Helper()
	r, err := Parse([]byte(body))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	chat, err := r.ChatBody()
	if err != nil {
		t.Fatalf("ChatBody: %v", err)
	}
	if _, err := openai.Parse(openai.Chat, chat); err != nil {
		t.Fatalf("openai.Parse refuses the chat body %s: %v", chat, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(chat, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func req(extra, messages string) string {
	if extra != "" {
		extra = "," + extra
	}
	return `{"model":"m","max_tokens":128,"messages":` + messages + extra + `}`
}

func TestChatBodyMessages(t *testing.T) {
	now = func() time.Time { return time.Unix(1700000000, 0) }
	defer func() { now = time.Now }()
	const toolUse = `{"role":"assistant","content":[{"type":"tool_use","id":"call_001","name":"read_file","input":{"path":"/tmp/img.png"}}]}`
	toolResult := func(content string) string {
		return `[` + toolUse + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_001","content":` + content + `}]}]`
	}
	const asstCall = `{"role":"assistant","tool_calls":[{"id":"call_001","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"/tmp/img.png\"}"}}]}`
	tests := []struct {
		name, extra, messages, want string
	}{
		{"string content", "", `[{"role":"user","content":"Hello"}]`, `[{"role":"user","content":"Hello"}]`},
		{"system string (test_system_string_unchanged)", `"system":"You are a helpful assistant."`, `[{"role":"user","content":"Hello"}]`,
			`[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Hello"}]`},
		{"system blocks joined without separator (test_system_without_billing_header_unchanged)",
			`"system":[{"type":"text","text":"You are a helpful assistant."},{"type":"text","text":" Be concise."}]`, `[{"role":"user","content":"Hello"}]`,
			`[{"role":"system","content":"You are a helpful assistant. Be concise."},{"role":"user","content":"Hello"}]`},
		{"billing header dropped (test_billing_header_stripped_from_system)",
			`"system":[{"type":"text","text":"You are a helpful assistant."},{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.37.abc; cc_entrypoint=cli;"}]`,
			`[{"role":"user","content":"Hello"}]`,
			`[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Hello"}]`},
		{"system messages hoisted into the leading one", `"system":"A"`,
			`[{"role":"user","content":"Hi"},{"role":"system","content":"B"},{"role":"system","content":[{"type":"text","text":"C"},{"type":"text","text":"x-anthropic-billing-header: x"}]}]`,
			`[{"role":"system","content":"ABC"},{"role":"user","content":"Hi"}]`},
		{"ctx and msg roles read as user", "", `[{"role":"ctx","content":"a"},{"role":"msg","content":"b"}]`,
			`[{"role":"user","content":"a"},{"role":"user","content":"b"}]`},
		{"one text block becomes a string; empty text dropped", "", `[{"role":"user","content":[{"type":"text","text":""},{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]`,
			`[{"role":"user","content":"hi"}]`},
		{"base64 image (test_base64_image_in_user_message)", "",
			`[{"role":"user","content":[{"type":"text","text":"Describe this image"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"iVBORw0KGgo="}}]}]`,
			`[{"role":"user","content":[{"type":"text","text":"Describe this image"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,iVBORw0KGgo="}}]}]`},
		{"url image (test_url_image_in_user_message)", "",
			`[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}}]}]`,
			`[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]`},
		{"image source defaults (test_missing_type_defaults_to_base64, test_missing_media_type_defaults_to_jpeg)", "",
			`[{"role":"user","content":[{"type":"image","source":{"media_type":"image/webp","data":"UklGR"}},{"type":"image","source":{"type":"base64","data":"abc123"}}]}]`,
			`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/webp;base64,UklGR"}},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,abc123"}}]}]`},
		{"tool_result string (test_tool_result_string_content)", "", toolResult(`"file contents here"`),
			`[` + asstCall + `,{"role":"tool","tool_call_id":"call_001","content":"file contents here"}]`},
		{"tool_result text blocks joined by newline (test_tool_result_text_blocks)", "", toolResult(`[{"type":"text","text":"line 1"},{"type":"text","text":"line 2"}]`),
			`[` + asstCall + `,{"role":"tool","tool_call_id":"call_001","content":"line 1\nline 2"}]`},
		{"tool_result images follow as a user message (test_tool_result_with_multiple_images)", "",
			toolResult(`[{"type":"text","text":"Here"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"IMG1"}},{"type":"image","source":{"type":"url","url":"https://example.com/img2.jpg"}}]`),
			`[` + asstCall + `,{"role":"tool","tool_call_id":"call_001","content":"Here"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,IMG1"}},{"type":"image_url","image_url":{"url":"https://example.com/img2.jpg"}}]}]`},
		{"tool_result null (test_tool_result_none_content)", "", toolResult(`null`),
			`[` + asstCall + `,{"role":"tool","tool_call_id":"call_001","content":""}]`},
		{"tool_result tool_reference items", "", toolResult(`[{"type":"tool_reference","tool_name":"search"},{"type":"tool_reference","name":"grep"}]`),
			`[` + asstCall + `,{"role":"tool","tool_call_id":"call_001","content":""},{"role":"tool","tool_call_id":"call_001","content":[{"type":"tool_reference","name":"search"},{"type":"tool_reference","name":"grep"}]}]`},
		{"tool messages precede the user's own text", "",
			`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"},{"type":"text","text":"next"}]}]`,
			`[{"role":"tool","tool_call_id":"a","content":"r"},{"role":"user","content":"next"}]`},
		{"assistant tool_result becomes text with Python's str()", "",
			`[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"it's","n":1.0,"ok":true,"x":null}]}]}]`,
			`[{"role":"user","content":"q"},{"role":"assistant","content":"Tool result: [{'type': 'text', 'text': \"it's\", 'n': 1.0, 'ok': True, 'x': None}]"}]`},
		{"tool_use: arguments as json.dumps prints them, missing id named by the clock", "",
			`[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"calling"},{"type":"tool_use","name":"f","input":{"b":"é","a":[1,2.50]}},{"type":"tool_use","id":"t2","name":"g"}]}]`,
			`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"call_1700000000","type":"function","function":{"name":"f","arguments":"{\"b\": \"\\u00e9\", \"a\": [1, 2.5]}"}},{"id":"t2","type":"function","function":{"name":"g","arguments":"{}"}}],"content":"calling"}]`},
		{"thinking plus text (test_thinking_plus_text_in_assistant_message)", "",
			`[{"role":"user","content":"Write me some code."},{"role":"assistant","content":[{"type":"thinking","thinking":"I should write a simple example.","signature":"sig_abc123"},{"type":"text","text":"Sure! Here is the code."}]}]`,
			`[{"role":"user","content":"Write me some code."},{"role":"assistant","reasoning":"I should write a simple example.","content":"Sure! Here is the code."}]`},
		{"thinking only: no content (test_thinking_only_in_assistant_message)", "",
			`[{"role":"user","content":"Hello"},{"role":"assistant","content":[{"type":"thinking","thinking":"Just thinking...","signature":"sig_xyz"}]}]`,
			`[{"role":"user","content":"Hello"},{"role":"assistant","reasoning":"Just thinking..."}]`},
		{"thinking blocks joined; redacted_thinking skipped (test_multiple_thinking_blocks_concatenated, test_redacted_thinking_block_is_accepted)", "",
			`[{"role":"user","content":"Think hard."},{"role":"assistant","content":[{"type":"thinking","thinking":"First thought. ","signature":"s1"},{"type":"redacted_thinking","data":"OPAQUE"},{"type":"thinking","thinking":"Second thought.","signature":"s2"},{"type":"text","text":"Done."}]}]`,
			`[{"role":"user","content":"Think hard."},{"role":"assistant","reasoning":"First thought. Second thought.","content":"Done."}]`},
		{"assistant without content kept, user without content dropped", "",
			`[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"redacted_thinking","data":"x"}]},{"role":"user","content":[{"type":"tool_reference","tool_name":"t"}]}]`,
			`[{"role":"user","content":"q"},{"role":"assistant"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := chatOf(t, req(tc.extra, tc.messages))
			if string(got["messages"]) != tc.want {
				t.Errorf("messages:\n got %s\nwant %s", got["messages"], tc.want)
			}
		})
	}
}

func TestChatBodyFields(t *testing.T) {
	tests := []struct {
		name, extra, want string
	}{
		{"defaults", ``, `{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":128,"max_completion_tokens":128}`},
		{"sampling, stop, kv_transfer_params, kwargs; metadata and thinking dropped",
			`"stop_sequences":["END"],"temperature":0.5,"top_p":0.9,"top_k":40,"metadata":{"user_id":"u"},"thinking":{"type":"enabled","budget_tokens":1024},"kv_transfer_params":{"do_remote_decode":true},"chat_template_kwargs":{"enable_thinking":false}`,
			`{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":128,"max_completion_tokens":128,"stop":["END"],"temperature":0.5,"top_p":0.9,"top_k":40,"kv_transfer_params":{"do_remote_decode":true},"chat_template_kwargs":{"enable_thinking":false}}`},
		{"stream asks for usage on every chunk", `"stream":true`,
			`{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":128,"max_completion_tokens":128,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
		{"output_config", `"output_config":{"effort":"high","format":{"type":"json_schema","schema":{"type":"object"}}}`,
			`{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":128,"max_completion_tokens":128,"response_format":{"type":"json_schema","json_schema":{"name":"json_schema","schema":{"type":"object"}}},"reasoning_effort":"high"}`},
		{"tools: auto by default, schema typed as an object", `"tools":[{"name":"get","description":"d","input_schema":{"properties":{}},"defer_loading":true},{"name":"h","input_schema":{"type":"object"}}]`,
			`{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":128,"max_completion_tokens":128,"tool_choice":"auto","tools":[{"type":"function","function":{"name":"get","description":"d","parameters":{"properties":{},"type":"object"},"defer_loading":true}},{"type":"function","function":{"name":"h","description":null,"parameters":{"type":"object"}}}]}`},
		{"tool_choice any is required", `"tool_choice":{"type":"any"},"tools":[{"name":"h","input_schema":{}}]`,
			`{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":128,"max_completion_tokens":128,"tool_choice":"required","tools":[{"type":"function","function":{"name":"h","description":null,"parameters":{"type":"object"}}}]}`},
		{"tool_choice tool names the function", `"tool_choice":{"type":"tool","name":"h"}`,
			`{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":128,"max_completion_tokens":128,"tool_choice":{"type":"function","function":{"name":"h"}}}`},
		{"tool_choice none; empty tools left out", `"tool_choice":{"type":"none"},"tools":[]`,
			`{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":128,"max_completion_tokens":128,"tool_choice":"none"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse([]byte(req(tc.extra, `[{"role":"user","content":"q"}]`)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.ChatBody()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("chat body:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	r, err := Parse([]byte(`{"model":"m","max_tokens":10.0,"stream":true,"messages":[{"role":"user","content":"q"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "m" || !r.Stream || r.MaxTokens != 10 {
		t.Errorf("got model %q stream %v max_tokens %d", r.Model, r.Stream, r.MaxTokens)
	}
}

func TestParseRefuses(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"q"}]`
	tests := []struct{ name, body, field string }{
		{"bad JSON", `{"model":`, "malformed JSON"},
		{"not an object", `[1]`, "JSON object"},
		{"missing model", `{"max_tokens":1,` + msgs + `}`, "model is required"},
		{"empty model", `{"model":"","max_tokens":1,` + msgs + `}`, "model is required"},
		{"model not a string", `{"model":1,"max_tokens":1,` + msgs + `}`, "model must be a string"},
		{"missing max_tokens", `{"model":"m",` + msgs + `}`, "max_tokens is required"},
		{"zero max_tokens", `{"model":"m","max_tokens":0,` + msgs + `}`, "max_tokens must be positive"},
		{"fractional max_tokens", `{"model":"m","max_tokens":1.5,` + msgs + `}`, "max_tokens must be an integer"},
		{"string max_tokens", `{"model":"m","max_tokens":"8",` + msgs + `}`, "max_tokens must be an integer"},
		{"missing messages", `{"model":"m","max_tokens":1}`, "messages is required"},
		{"bad role", `{"model":"m","max_tokens":1,"messages":[{"role":"tool","content":"q"}]}`, "messages[0].role"},
		{"missing content", `{"model":"m","max_tokens":1,"messages":[{"role":"user"}]}`, "messages[0].content is required"},
		{"unknown block type", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"document"}]}]}`, `messages[0].content[0].type "document"`},
		{"block text not a string", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, "messages[0].content[0]: text has the wrong type"},
		{"tool_use input not an object", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","input":[1]}]}]}`, "messages[0].content[0].input"},
		{"tool_result content a number", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","content":3}]}]}`, "messages[0].content[0].content"},
		{"bad system block", `{"model":"m","max_tokens":1,"system":[{"type":"video"}],` + msgs + `}`, "system[0].type"},
		{"stream not a boolean", `{"model":"m","max_tokens":1,"stream":"yes",` + msgs + `}`, "stream must be a boolean"},
		{"stop_sequences not strings", `{"model":"m","max_tokens":1,"stop_sequences":[1],` + msgs + `}`, "stop_sequences"},
		{"top_k fractional", `{"model":"m","max_tokens":1,"top_k":1.5,` + msgs + `}`, "top_k"},
		{"tool_choice unknown", `{"model":"m","max_tokens":1,"tool_choice":{"type":"all"},` + msgs + `}`, "tool_choice.type"},
		{"tool_choice tool without name", `{"model":"m","max_tokens":1,"tool_choice":{"type":"tool"},` + msgs + `}`, "tool_choice.name is required"},
		{"tool without schema", `{"model":"m","max_tokens":1,"tools":[{"name":"f"}],` + msgs + `}`, "tools[0].input_schema"},
		{"tool without name", `{"model":"m","max_tokens":1,"tools":[{"input_schema":{}}],` + msgs + `}`, "tools[0].name is required"},
		{"bad effort", `{"model":"m","max_tokens":1,"output_config":{"effort":"huge"},` + msgs + `}`, "output_config.effort"},
		{"metadata not an object", `{"model":"m","max_tokens":1,"metadata":"x",` + msgs + `}`, "metadata must be an object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.body))
			if !errors.Is(err, openai.ErrBadRequest) {
				t.Fatalf("Parse(%s) = %v, want an error wrapping openai.ErrBadRequest", tc.body, err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %q", err, tc.field)
			}
		})
	}
}

func TestChatBodyRefusesAnEmptyConversation(t *testing.T) {
	r, err := Parse([]byte(req("", `[]`)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ChatBody(); !errors.Is(err, openai.ErrBadRequest) || !strings.Contains(err.Error(), "messages") {
		t.Errorf("ChatBody of an empty conversation = %v, want a bad request naming messages", err)
	}
}

func TestParseCountTokens(t *testing.T) {
	model, chat, err := ParseCountTokens([]byte(`{"model":"m","system":"S","messages":[{"role":"user","content":"q"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"chat_template_kwargs":{"k":1},"max_tokens":"ignored","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"q"}],"chat_template_kwargs":{"k":1},"tool_choice":"auto","tools":[{"type":"function","function":{"name":"f","description":null,"parameters":{"type":"object"}}}]}`
	if model != "m" || string(chat) != want {
		t.Errorf("ParseCountTokens = %q, %s\nwant m, %s", model, chat, want)
	}
	if _, _, err := ParseCountTokens([]byte(`{"messages":[]}`)); !errors.Is(err, openai.ErrBadRequest) {
		t.Errorf("count_tokens without a model: %v", err)
	}
}
