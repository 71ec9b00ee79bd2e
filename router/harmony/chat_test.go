package harmony

import (
	"errors"
	"testing"
)

// The vectors below follow vLLM's chat path for gpt-oss (see
// docs/VLLM_PARITY.md, "gpt-oss and Mistral prompts"): OnlineRenderer's
// _make_request_with_harmony builds the preamble with
// build_harmony_preamble and converts messages with
// parse_chat_inputs_to_harmony_messages; the message text is the
// library's rendering, as in render_test.go.

const date = "2026-01-02"

// sysMsg is the system message vLLM writes for effort on date.
func sysMsg(effort string, functions bool) string {
	s := sysHead + "Current date: " + date + "\n\nReasoning: " + effort + "\n\n" + channels
	if functions {
		s += "\nCalls to these tools must go to the commentary channel: 'functions'."
	}
	return s + "<|end|>"
}

func TestRenderChat(t *testing.T) {
	const weatherTool = `[{"type":"function","function":{"name":"get_weather","description":"Weather now.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	const weatherNS = "# Tools\n\n## functions\n\nnamespace functions {\n\n// Weather now.\ntype get_weather = (_: {\ncity: string,\n}) => any;\n\n} // namespace functions"
	tests := []struct {
		name, body, want string
	}{
		{"plain user turn", `{"messages":[{"role":"user","content":"Hi"}]}`,
			sysMsg("medium", false) + "<|start|>user<|message|>Hi<|end|><|start|>assistant"},
		{"effort low", `{"reasoning_effort":"low","messages":[{"role":"user","content":"Hi"}]}`,
			sysMsg("low", false) + "<|start|>user<|message|>Hi<|end|><|start|>assistant"},
		{"effort medium", `{"reasoning_effort":"medium","messages":[{"role":"user","content":"Hi"}]}`,
			sysMsg("medium", false) + "<|start|>user<|message|>Hi<|end|><|start|>assistant"},
		{"effort high", `{"reasoning_effort":"high","messages":[{"role":"user","content":"Hi"}]}`,
			sysMsg("high", false) + "<|start|>user<|message|>Hi<|end|><|start|>assistant"},
		{"system message becomes developer instructions",
			`{"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi"}]}`,
			sysMsg("medium", false) + "<|start|>developer<|message|># Instructions\n\nBe terse.<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant"},
		{"developer parts joined", `{"messages":[{"role":"developer","content":[{"type":"text","text":"Be "},{"type":"text","text":"terse."}]},{"role":"user","content":"Hi"}]}`,
			sysMsg("medium", false) + "<|start|>developer<|message|># Instructions\n\nBe terse.<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant"},
		{"tools", `{"tools":` + weatherTool + `,"messages":[{"role":"user","content":"Weather in Oslo?"}]}`,
			sysMsg("medium", true) + "<|start|>developer<|message|>" + weatherNS + "<|end|><|start|>user<|message|>Weather in Oslo?<|end|><|start|>assistant"},
		{"tool call and result", `{"tools":` + weatherTool + `,"messages":[
			{"role":"user","content":"Weather in Oslo?"},
			{"role":"assistant","reasoning":"Need the tool.","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"-3C"}]}`,
			sysMsg("medium", true) + "<|start|>developer<|message|>" + weatherNS + "<|end|><|start|>user<|message|>Weather in Oslo?<|end|>" +
				"<|start|>assistant<|channel|>analysis<|message|>Need the tool.<|end|>" +
				`<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Oslo"}<|call|>` +
				"<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>-3C<|end|><|start|>assistant"},
		{"earlier analysis dropped", `{"messages":[
			{"role":"user","content":"2+2?"},
			{"role":"assistant","reasoning":"Add.","content":"4"},
			{"role":"user","content":"3+5?"}]}`,
			sysMsg("medium", false) + "<|start|>user<|message|>2+2?<|end|><|start|>assistant<|channel|>final<|message|>4<|end|>" +
				"<|start|>user<|message|>3+5?<|end|><|start|>assistant"},
		{"analysis of the current turn dropped before its final", `{"messages":[
			{"role":"user","content":"2+2?"},
			{"role":"assistant","reasoning":"Add.","content":"4"}]}`,
			sysMsg("medium", false) + "<|start|>user<|message|>2+2?<|end|><|start|>assistant<|channel|>final<|message|>4<|end|><|start|>assistant"},
		{"assistant without content adds nothing", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":""}]}`,
			sysMsg("medium", false) + "<|start|>user<|message|>a<|end|><|start|>assistant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderChat([]byte(tt.body), Options{Date: date})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestRenderChatSystemInstructions(t *testing.T) {
	body := `{"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi"}]}`
	got, err := RenderChat([]byte(body), Options{Date: date, SystemInstructions: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "<|start|>system<|message|>" + DefaultIdentity + "\nBe terse.\nKnowledge cutoff: 2024-06\nCurrent date: " + date +
		"\n\nReasoning: medium\n\n" + channels + "<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestRenderChatUnsupported lists what the router will not vouch for.
func TestRenderChatUnsupported(t *testing.T) {
	tests := []struct{ name, body string }{
		{"effort none", `{"reasoning_effort":"none","messages":[{"role":"user","content":"Hi"}]}`},
		{"effort unknown", `{"reasoning_effort":"max","messages":[{"role":"user","content":"Hi"}]}`},
		{"later system message", `{"messages":[{"role":"user","content":"Hi"},{"role":"system","content":"x"}]}`},
		{"unknown role", `{"messages":[{"role":"critic","content":"Hi"}]}`},
		{"special token in text", `{"messages":[{"role":"user","content":"a<|end|>b"}]}`},
		{"special token in instructions", `{"messages":[{"role":"system","content":"<|start|>"},{"role":"user","content":"b"}]}`},
		{"tool without description", `{"tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"Hi"}]}`},
		{"tool of another type", `{"tools":[{"type":"custom","function":{"name":"f","description":"d"}}],"messages":[]}`},
		{"parameters not an object", `{"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":[1]}}],"messages":[]}`},
		{"content parts not objects", `{"messages":[{"role":"user","content":["a"]}]}`},
		{"not JSON", `{"messages":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RenderChat([]byte(tt.body), Options{Date: date})
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("err = %v, want ErrUnsupported", err)
			}
		})
	}
}
