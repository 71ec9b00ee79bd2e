package harmony

import (
	"strings"
	"testing"
)

// Vectors in this file are the expected renderings in openai/harmony's
// test-data (commit ec7606df9e87e3d0a1fec9f50928c1e407f0c438), built from
// the same messages as its src/tests.rs.

const sysHead = "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\n"

const channels = "# Valid channels: analysis, commentary, final. Channel must be included for every message."

func sys(date, effort string) Message {
	s := NewSystem()
	s.StartDate, s.ReasoningEffort = date, effort
	return Message{Role: RoleSystem, System: &s}
}

func dev(instructions string, tools ...Tool) Message {
	d := &DeveloperContent{Functions: tools}
	if instructions != "" {
		d.Instructions = &instructions
	}
	return Message{Role: RoleDeveloper, Developer: d}
}

func user(text string) Message { return Message{Role: RoleUser, Text: text} }

func TestRenderForCompletionVectors(t *testing.T) {
	const robot = "Answer the user's questions like a robot."
	const capital = "What is the capital of the largest country in the world?"
	withDev := func(effort string) string {
		return sysHead + "\nReasoning: " + effort + "\n\n" + channels + "<|end|><|start|>developer<|message|># Instructions\n\n" +
			robot + "<|end|><|start|>user<|message|>" + capital + "<|end|><|start|>assistant"
	}
	tests := []struct {
		name string // the test-data file
		msgs []Message
		want string
	}{
		{"test_simple_convo", []Message{sys("", "medium"), user("What is 2 + 2?")},
			sysHead + "\nReasoning: medium\n\n" + channels + "<|end|><|start|>user<|message|>What is 2 + 2?<|end|><|start|>assistant"},
		{"test_simple_convo_low_effort", []Message{sys("", "low"), dev(robot), user(capital)}, withDev("low")},
		{"test_simple_convo_medium_effort", []Message{sys("", "medium"), dev(robot), user(capital)}, withDev("medium")},
		{"test_simple_convo_high_effort", []Message{sys("", "high"), dev(robot), user(capital)}, withDev("high")},
		{"test_simple_convo_high_effort_no_instruction", []Message{sys("", "high"), user(capital)},
			sysHead + "\nReasoning: high\n\n" + channels + "<|end|><|start|>user<|message|>" + capital + "<|end|><|start|>assistant"},
		{"test_no_tools", []Message{sys("2025-06-28", "medium")},
			sysHead + "Current date: 2025-06-28\n\nReasoning: medium\n\n" + channels + "<|end|><|start|>assistant"},
		{"test_dropping_cot_by_default", []Message{
			user("What is 2 + 2?"),
			{Role: RoleAssistant, Channel: "analysis", Text: "User asks: “What is 2 + 2?” Simple arithmetic. Provide answer."},
			{Role: RoleAssistant, Channel: "final", Text: "2 + 2 equals 4."},
			user("What about 9 / 2?"),
		}, "<|start|>user<|message|>What is 2 + 2?<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 equals 4.<|end|>" +
			"<|start|>user<|message|>What about 9 / 2?<|end|><|start|>assistant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderForCompletion(tt.msgs)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestRenderFunctionsWithParameters is test_render_functions_with_parameters:
// tools as a TypeScript-like namespace, with every schema feature the
// library writes (enums, defaults, arrays, titles, examples, nullable,
// oneOf), property order as sent.
func TestRenderFunctionsWithParameters(t *testing.T) {
	tools := []Tool{
		{Name: "get_location", Description: "Gets the location of the user."},
		{Name: "get_current_weather", Description: "Gets the current weather in the provided location.", Parameters: []byte(`{
			"type": "object",
			"properties": {
				"location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
				"format": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
			},
			"required": ["location"]}`)},
		{Name: "get_multiple_weathers", Description: "Gets the current weather in the provided list of locations.", Parameters: []byte(`{
			"type": "object",
			"properties": {
				"locations": {"type": "array", "items": {"type": "string"}, "description": "List of city and state, e.g. [\"San Francisco, CA\", \"New York, NY\"]"},
				"format": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
			},
			"required": ["locations"]}`)},
		{Name: "kitchensink", Description: "A function with various complex schemas.", Parameters: []byte(`{
			"description": "params object",
			"type": "object",
			"properties": {
				"string": {"type": "string", "title": "STRING", "description": "A string", "examples": ["hello", "world"]},
				"string_nullable": {"type": "string", "nullable": true, "description": "A nullable string", "default": "the default"},
				"string_enum": {"type": "string", "enum": ["a", "b", "c"]},
				"oneof_string_or_number": {
					"oneOf": [
						{"type": "string", "default": "default_string_in_oneof"},
						{"type": "number", "description": "numbers can happen too"}
					],
					"description": "a oneof",
					"default": 20
				}
			}}`)},
	}
	msgs := []Message{sys("2025-06-28", "high"), dev("Always respond in riddles", tools...), user("What is the weather like in SF?")}
	got, err := RenderForCompletion(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if got != functionsVector {
		t.Errorf("got\n%s\nwant\n%s", got, functionsVector)
	}
}

const functionsVector = sysHead + `Current date: 2025-06-28

Reasoning: high

` + channels + `
Calls to these tools must go to the commentary channel: 'functions'.<|end|><|start|>developer<|message|># Instructions

Always respond in riddles

# Tools

## functions

namespace functions {

// Gets the location of the user.
type get_location = () => any;

// Gets the current weather in the provided location.
type get_current_weather = (_: {
// The city and state, e.g. San Francisco, CA
location: string,
format?: "celsius" | "fahrenheit", // default: celsius
}) => any;

// Gets the current weather in the provided list of locations.
type get_multiple_weathers = (_: {
// List of city and state, e.g. ["San Francisco, CA", "New York, NY"]
locations: string[],
format?: "celsius" | "fahrenheit", // default: celsius
}) => any;

// A function with various complex schemas.
type kitchensink = (_: // params object
{
// STRING
//
// A string
// Examples:
// - "hello"
// - "world"
string?: string,
// A nullable string
string_nullable?: string | null, // default: "the default"
string_enum?: "a" | "b" | "c",
// a oneof
// default: 20
oneof_string_or_number?:
 | string // default: "default_string_in_oneof"
 | number // numbers can happen too
,
}) => any;

} // namespace functions<|end|><|start|>user<|message|>What is the weather like in SF?<|end|><|start|>assistant`

// TestRenderHeaders pins the header order of encoding.rs's Render<Message>:
// role (or a tool's name), " to=recipient", channel, " content type", and
// <|call|> ending an assistant message with a recipient.
func TestRenderHeaders(t *testing.T) {
	tests := []struct {
		name string
		msg  Message
		want string
	}{
		{"tool call", Message{Role: RoleAssistant, Channel: "commentary", Recipient: "functions.get_weather", ContentType: "json", Text: `{"location":"Tokyo"}`},
			`<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"location":"Tokyo"}<|call|>`},
		{"constrained tool call", Message{Role: RoleAssistant, Channel: "commentary", Recipient: "functions.f", ContentType: "<|constrain|>json", Text: "{}"},
			`<|start|>assistant to=functions.f<|channel|>commentary <|constrain|>json<|message|>{}<|call|>`},
		// test_tool_response_parsing.txt, ended as a rendered message is.
		{"tool result", Message{Role: RoleTool, Name: "browser.search", Recipient: "assistant", Channel: "commentary", Text: `{"result": "https://openai.com/"}`},
			`<|start|>browser.search to=assistant<|channel|>commentary<|message|>{"result": "https://openai.com/"}<|end|>`},
		{"named user", Message{Role: RoleUser, Name: "ann", Text: "hi"}, "<|start|>user:ann<|message|>hi<|end|>"},
		{"recipient all", Message{Role: RoleUser, Recipient: "all", Text: "hi"}, "<|start|>user<|message|>hi<|end|>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := renderMessage(&b, tt.msg, false); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got  %q\nwant %q", b.String(), tt.want)
			}
		})
	}
	if _, err := RenderForCompletion([]Message{{Role: RoleTool, Text: "x"}}); err == nil {
		t.Error("a tool message without a name rendered")
	}
}
