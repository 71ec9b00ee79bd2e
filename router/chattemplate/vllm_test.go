package chattemplate

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// dump prints what a template receives, so each case below states the exact
// conversation vLLM would hand the template (key order included).
const dump = `{% for m in messages %}{{ __llmgw_tojson(m) }}
{% endfor %}tools={{ __llmgw_tojson(tools) }} documents={{ __llmgw_tojson(documents) }} gen={{ add_generation_prompt }}` +
	`{% if enable_thinking is defined %} thinking={{ enable_thinking }}{% endif %}{% if reasoning_effort is defined %} effort={{ reasoning_effort }}{% endif %}` +
	`{% if flag is defined %} flag={{ flag }}{% endif %}{% if padding is defined %} padding={{ padding }}{% endif %}`

// dumpOpenAI is dump for a template that loops over content, which vLLM
// gives list-style ("openai") content.
const dumpOpenAI = dump + `{% for m in messages %}{% for p in m.content %}{% endfor %}{% endfor %}`

// TestRenderFollowsVLLM pins, one case per behaviour, what vLLM's
// chat_utils.parse_chat_messages, ChatCompletionRequest.build_chat_params
// and ChatParams.with_defaults hand the template (docs/VLLM_PARITY.md).
func TestRenderFollowsVLLM(t *testing.T) {
	t.Parallel()
	for _, tc := range slices.Concat(vllmContentCases(), vllmMessageCases(), vllmParamCases()) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := New(tc.tmpl, nil)
			if err != nil {
				t.Fatal(err)
			}
			req, err := ParseRequest([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Render(req)
			if err != nil || got != tc.want {
				t.Fatalf("Render = %v\n got %s\nwant %s", err, got, tc.want)
			}
		})
	}
}

// vllmCase is a request body and what template tmpl renders for it.
type vllmCase struct {
	name, tmpl, body, want string
}

// userQ is a one-message conversation for cases about the rest of the
// request.
const userQ = `{"role":"user","content":"q"}`

// vllmContentCases pin how message content reaches the template: a string,
// or parts joined or kept as parts.
func vllmContentCases() []vllmCase {
	return []vllmCase{
		{"string content stays a string", dump, `{"messages":[` + userQ + `]}`,
			`{"role": "user", "content": "q"}` + "\ntools=null documents=null gen=True"},
		{"string content becomes one text part for openai templates", dumpOpenAI, `{"messages":[` + userQ + `]}`,
			`{"role": "user", "content": [{"type": "text", "text": "q"}]}` + "\ntools=null documents=null gen=True"},
		{"text-like parts joined by newline", dump,
			`{"messages":[{"role":"user","content":["bare",{"type":"text","text":"a"},{"type":"input_text","text":"b"},{"type":"output_text","text":"c"},{"type":"refusal","refusal":"r"},{"type":"thinking","thinking":"t"},{"type":"text","text":null}]}]}`,
			`{"role": "user", "content": "bare\na\nb\nc\nr\nt"}` + "\ntools=null documents=null gen=True"},
		{"empty text parts dropped before the join", dump,
			`{"messages":[{"role":"user","content":[{"type":"text","text":"A"},{"type":"text","text":""},{"type":"text","text":"B"}]},` +
				`{"role":"user","content":["",{"type":"input_text","text":"C"},{"type":"output_text","text":""},{"type":"refusal","refusal":""},{"type":"thinking","thinking":""},{"type":"tool_reference","name":""},"D"]},` +
				`{"role":"user","content":[{"type":"text","text":""},""]},{"role":"user","content":[]},{"role":"user","content":""}]}`,
			`{"role": "user", "content": "A\nB"}` + "\n" + `{"role": "user", "content": "C\nD"}` + "\n" +
				`{"role": "user", "content": ""}` + "\n" + `{"role": "user", "content": ""}` + "\n" + `{"role": "user", "content": ""}` +
				"\ntools=null documents=null gen=True"},
		{"empty text parts kept for openai templates (a part dict is never falsy)", dumpOpenAI,
			`{"messages":[{"role":"user","content":[{"type":"text","text":"A"},{"type":"text","text":""},"",{"type":"text","text":null}]},` +
				`{"role":"user","content":[]},{"role":"user","content":""}]}`,
			`{"role": "user", "content": [{"type": "text", "text": "A"}, {"type": "text", "text": ""}, {"type": "text", "text": ""}]}` + "\n" +
				`{"role": "user", "content": []}` + "\n" + `{"role": "user", "content": [{"type": "text", "text": ""}]}` +
				"\ntools=null documents=null gen=True"},
		{"tool message with an empty text part keeps it in the join for openai templates", dumpOpenAI,
			`{"messages":[{"role":"tool","tool_call_id":"1","content":[{"type":"text","text":"x"},{"type":"text","text":""},{"type":"text","text":"y"}]}]}`,
			`{"role": "tool", "content": "x\n\ny", "tool_call_id": "1"}` + "\ntools=null documents=null gen=True"},
		{"parts rebuilt as text parts for openai templates", dumpOpenAI,
			`{"messages":[{"role":"user","content":[{"text":"a","type":"input_text","extra":1},{"type":"tool_reference","name":"f"}]}]}`,
			`{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "tool_reference", "name": "f"}]}` + "\ntools=null documents=null gen=True"},
		{"null content", dumpOpenAI, `{"messages":[{"role":"assistant","content":null}],"add_generation_prompt":false}`,
			`{"role": "assistant", "content": []}` + "\ntools=null documents=null gen=False"},
	}
}

// vllmMessageCases pin which message fields reach the template, and in
// what form.
func vllmMessageCases() []vllmCase {
	return []vllmCase{
		{"unknown message fields dropped, name kept only as a string", dump,
			`{"messages":[{"role":"user","content":"q","name":"ann","extra":1,"tool_call_id":"x","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"r","name":5}]}`,
			`{"role": "user", "content": "q", "name": "ann"}` + "\n" + `{"role": "user", "content": "r"}` + "\ntools=null documents=null gen=True"},
		{"assistant reasoning also as reasoning_content", dump,
			`{"messages":[{"role":"assistant","content":"a","reasoning":"think"},{"role":"assistant","content":"b","reasoning_content":"old"}],"add_generation_prompt":false}`,
			`{"role": "assistant", "content": "a", "reasoning": "think", "reasoning_content": "think"}` + "\n" +
				`{"role": "assistant", "content": "b", "reasoning": "old", "reasoning_content": "old"}` + "\ntools=null documents=null gen=False"},
		{"tool calls in OpenAI's declaration order, arguments parsed, bad JSON becomes {}", dump,
			`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"type":"function","index":0,"function":{"name":"f","arguments":"{\"z\": 1, \"a\": [1.0]}"},"id":"1"},{"id":"2","type":"function","function":{"name":"g","arguments":"{oops"}}]}],"add_generation_prompt":false}`,
			`{"role": "assistant", "content": "", "tool_calls": [{"id": "1", "function": {"arguments": {"z": 1, "a": [1.0]}, "name": "f"}, "type": "function", "index": 0}, ` +
				`{"id": "2", "function": {"arguments": {}, "name": "g"}, "type": "function"}]}` +
				"\ntools=null documents=null gen=False"},
		{"empty tool_calls dropped", dump, `{"messages":[{"role":"assistant","content":"a","tool_calls":[]}],"add_generation_prompt":false}`,
			`{"role": "assistant", "content": "a"}` + "\ntools=null documents=null gen=False"},
		{"tool message keeps tool_call_id and joins text parts even for openai templates", dumpOpenAI,
			`{"messages":[{"role":"tool","tool_call_id":"1","content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]},{"role":"tool","tool_call_id":null,"content":[{"type":"tool_reference","name":"f"}]}]}`,
			`{"role": "tool", "content": "x\ny", "tool_call_id": "1"}` + "\n" +
				`{"role": "tool", "content": [{"type": "tool_reference", "name": "f"}], "tool_call_id": null}` + "\ntools=null documents=null gen=True"},
		{"developer messages carry their tools, task kept as a string", dump,
			`{"messages":[{"role":"developer","content":"d","task":"t"}]}`,
			`{"role": "developer", "content": "d", "task": "t", "tools": null}` + "\ntools=null documents=null gen=True"},
		{"developer tools in OpenAI's declaration order", dump,
			`{"messages":[{"role":"developer","content":"d","tools":[{"type":"function","function":{"strict":true,"parameters":{},"name":"f","x":1}}]}]}`,
			`{"role": "developer", "content": "d", "tools": [{"function": {"name": "f", "parameters": {}, "strict": true, "x": 1}, "type": "function"}]}` + "\ntools=null documents=null gen=True"},
	}
}

// vllmParamCases pin the request's tools, documents, flags and
// chat_template_kwargs as the template sees them.
func vllmParamCases() []vllmCase {
	return []vllmCase{
		{"tools as model_dump prints them", dump,
			`{"messages":[` + userQ + `],"tools":[{"function":{"strict":true,"parameters":{"type":"object"},"name":"f"},"extra":1},{"type":"function","defer_loading":true,"function":{"name":"g","description":"d"}}]}`,
			`{"role": "user", "content": "q"}` + "\ntools=" +
				`[{"type": "function", "function": {"name": "f", "description": null, "parameters": {"type": "object"}, "strict": true}}, ` +
				`{"type": "function", "function": {"name": "g", "description": "d", "parameters": null, "defer_loading": true}, "defer_loading": true}]` +
				" documents=null gen=True"},
		{"documents reach the template", dump, `{"messages":[` + userQ + `],"documents":[{"title":"t","text":"x"}]}`,
			`{"role": "user", "content": "q"}` + "\ntools=null documents=[{\"title\": \"t\", \"text\": \"x\"}] gen=True"},
		{"request fields win over kwargs; null and auto kwargs dropped; named parameters do not reach the template", dump,
			`{"messages":[` + userQ + `],"add_generation_prompt":true,"chat_template_kwargs":{"add_generation_prompt":false,"flag":"auto","padding":true,"enable_thinking":null}}`,
			`{"role": "user", "content": "q"}` + "\ntools=null documents=null gen=True"},
		{"kwargs reach the template; kwargs tools replace the request's", dump,
			`{"messages":[` + userQ + `],"tools":[{"type":"function","function":{"name":"f"}}],"chat_template_kwargs":{"flag":"!","tools":[{"name":"raw"}],"documents":[{"a":"b"}]}}`,
			`{"role": "user", "content": "q"}` + "\ntools=[{\"name\": \"raw\"}] documents=[{\"a\": \"b\"}] gen=True flag=!"},
		{"reasoning_effort sets enable_thinking", dump, `{"messages":[` + userQ + `],"reasoning_effort":"none"}`,
			`{"role": "user", "content": "q"}` + "\ntools=null documents=null gen=True thinking=False effort=none"},
		{"kwargs enable_thinking wins over reasoning_effort", dump,
			`{"messages":[` + userQ + `],"reasoning_effort":"high","chat_template_kwargs":{"enable_thinking":false}}`,
			`{"role": "user", "content": "q"}` + "\ntools=null documents=null gen=True thinking=False effort=high"},
	}
}

// TestRefusedLikeVLLM lists requests vLLM answers with 400: the router must
// refuse them too, naming the field, rather than route them with keys of a
// prompt the replica never builds.
func TestRefusedLikeVLLM(t *testing.T) {
	t.Parallel()
	const q = `{"role":"user","content":"q"}`
	for _, tc := range []struct {
		name, body, wantErr string
	}{
		{"empty tools", `{"messages":[` + q + `],"tools":[]}`, "tools: must not be an empty array"},
		{"request chat template", `{"messages":[` + q + `],"chat_template":"{{ 1 }}"}`, "chat_template"},
		{"kwargs chat template", `{"messages":[` + q + `],"chat_template_kwargs":{"chat_template":"x"}}`, "chat_template_kwargs.chat_template"},
		{"kwargs not an object", `{"messages":[` + q + `],"chat_template_kwargs":[1]}`, "chat_template_kwargs"},
		{"both generation flags", `{"messages":[` + q + `],"continue_final_message":true}`, "continue_final_message"},
		{"unknown reasoning_effort", `{"messages":[` + q + `],"reasoning_effort":"extreme"}`, "reasoning_effort"},
		{"documents not objects", `{"messages":[` + q + `],"documents":["x"]}`, "documents"},
		{"kwargs messages", `{"messages":[` + q + `],"chat_template_kwargs":{"messages":[]}}`, "chat_template_kwargs.messages"},
		{"kwargs conversation", `{"messages":[` + q + `],"chat_template_kwargs":{"conversation":[]}}`, "chat_template_kwargs.conversation"},
		{"kwargs tools not a list of objects", `{"messages":[` + q + `],"chat_template_kwargs":{"tools":"x"}}`, "chat_template_kwargs.tools"},
		{"unknown part type", `{"messages":[{"role":"user","content":[{"type":"video","x":1}]}]}`, `messages[0].content[0].type: unsupported content part type "video"`},
		{"part without type", `{"messages":[{"role":"user","content":[{"text":"a"}]}]}`, "messages[0].content[0].type: missing"},
		{"text part with a uuid", `{"messages":[{"role":"user","content":[{"type":"text","text":"a","uuid":"u"}]}]}`, "messages[0].content[0].type: missing"},
		{"thinking part without text", `{"messages":[{"role":"user","content":[{"type":"thinking"}]}]}`, "messages[0].content[0].thinking"},
		{"tool of another type", `{"messages":[` + q + `],"tools":[{"type":"web","function":{"name":"f"}}]}`, "tools[0].type"},
		{"tool without a name", `{"messages":[` + q + `],"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name"},
		{"tool parameters not an object", `{"messages":[` + q + `],"tools":[{"function":{"name":"f","parameters":[1]}}]}`, "tools[0].function.parameters"},
		{"bad role", `{"messages":[{"content":"x"}]}`, "messages[0].role"},
		{"developer tool without a name", `{"messages":[{"role":"developer","content":"d","tools":[{"type":"function","function":{}}]}]}`, "messages[0].tools[0].function.name"},
		{"bad content", `{"messages":[{"role":"user","content":5}]}`, "messages[0].content"},
		{"tool call without function", `{"messages":[{"role":"assistant","tool_calls":[{"id":"1","type":"function"}]}],"add_generation_prompt":false}`, "messages[0].tool_calls[0].function"},
		{"tool call without id", `{"messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}],"add_generation_prompt":false}`, "messages[0].tool_calls[0].id"},
		{"tool call arguments not a string", `{"messages":[{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":{}}}]}],"add_generation_prompt":false}`, "messages[0].tool_calls[0].function.arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := New(dump, nil)
			if err != nil {
				t.Fatal(err)
			}
			req, err := ParseRequest([]byte(tc.body))
			if err == nil {
				_, err = tmpl.Render(req)
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v; want one mentioning %q", err, tc.wantErr)
			}
			if errors.Is(err, ErrMultimodal) {
				t.Fatalf("error %v is marked multimodal; vLLM refuses it", err)
			}
		})
	}
}

// TestMultimodalIsMarked: media parts need the model's processor; Render
// says so with ErrMultimodal (the router then routes approximately).
func TestMultimodalIsMarked(t *testing.T) {
	t.Parallel()
	tmpl, err := New(dump, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{
		`{"type":"image_url","image_url":{"url":"x"}}`, `{"type":"input_audio","input_audio":{"data":"x","format":"wav"}}`,
		`{"type":"video_url","video_url":{"url":"x"}}`, `{"image_url":"x"}`, `{"type":"text","uuid":"u","audio_url":"x"}`,
		`{"type":"prompt_embeds","data":"x"}`,
	} {
		req, err := ParseRequest([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},` + part + `]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tmpl.Render(req); !errors.Is(err, ErrMultimodal) {
			t.Errorf("part %s: error %v; want ErrMultimodal", part, err)
		}
	}
}
