package responses

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/openai"
)

// routing is Request's comparable fields.
type routing struct {
	Model                            string
	Stream, Store, Background        bool
	PreviousResponseID, Instructions string
	MaxOutputTokens                  int64
}

func TestParseReadsRoutingFields(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		want       routing
	}{
		{"defaults: store true, the rest zero", `{"model":"m","input":"hi"}`,
			routing{Model: "m", Store: true}},
		{"every field", `{"model":"m","input":"hi","stream":true,"store":false,"previous_response_id":"resp_1","instructions":"be brief","max_output_tokens":64}`,
			routing{Model: "m", Stream: true, PreviousResponseID: "resp_1", Instructions: "be brief", MaxOutputTokens: 64}},
		{"background with store", `{"model":"m","input":"hi","background":true}`,
			routing{Model: "m", Store: true, Background: true}},
		{"an explicit null store is false, as vLLM keeps it", `{"model":"m","input":"hi","store":null}`,
			routing{Model: "m"}},
		{"nulls are defaults", `{"model":"m","input":"hi","stream":null,"instructions":null,"max_output_tokens":null,"tools":null}`,
			routing{Model: "m", Store: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := Parse([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got := routing{Model: r.Model, Stream: r.Stream, Store: r.Store, Background: r.Background,
				PreviousResponseID: r.PreviousResponseID, Instructions: r.Instructions, MaxOutputTokens: r.MaxOutputTokens}
			if got != tc.want {
				t.Fatalf("Parse = %+v, want %+v", got, tc.want)
			}
			if string(r.Body) != tc.body {
				t.Fatalf("Body = %s, want the request as received", r.Body)
			}
		})
	}
}

func TestParseStringInputIsOneUserMessage(t *testing.T) {
	t.Parallel()
	r, err := Parse([]byte(`{"model":"m","input":"hé \"q\""}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Input) != 1 {
		t.Fatalf("Input has %d items, want 1", len(r.Input))
	}
	var item map[string]string
	if err := json.Unmarshal(r.Input[0], &item); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"type": "message", "role": "user", "content": `hé "q"`}
	if len(item) != len(want) || item["type"] != want["type"] || item["role"] != want["role"] || item["content"] != want["content"] {
		t.Fatalf("item = %v, want %v", item, want)
	}
}

func TestParseRefusesNamingTheField(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, body, field string }{
		{"empty body", ``, "JSON object"},
		{"not an object", `[1]`, "JSON object"},
		{"bad JSON", `{"model":`, "malformed JSON"},
		{"missing model", `{"input":"hi"}`, "model is required"},
		{"model not a string", `{"model":1,"input":"hi"}`, "model must be a string"},
		{"missing input", `{"model":"m"}`, "input is required"},
		{"input a number", `{"model":"m","input":3}`, "input must be"},
		{"stream not a boolean", `{"model":"m","input":"hi","stream":"yes"}`, "stream must be a boolean"},
		{"store not a boolean", `{"model":"m","input":"hi","store":1}`, "store must be a boolean"},
		{"max_output_tokens not an integer", `{"model":"m","input":"hi","max_output_tokens":"9"}`, "max_output_tokens must be an integer"},
		{"previous_response_id not a string", `{"model":"m","input":"hi","previous_response_id":7}`, "previous_response_id must be a string"},
		{"instructions not a string", `{"model":"m","input":"hi","instructions":["a"]}`, "instructions must be a string"},
		{"background without store", `{"model":"m","input":"hi","background":true,"store":false}`, "background can only be used when `store` is true"},
		{"prompt template", `{"model":"m","input":"hi","prompt":{"id":"p"}}`, "prompt"},
		{"empty cache_salt", `{"model":"m","input":"hi","cache_salt":""}`, "cache_salt"},
		{"unknown truncation", `{"model":"m","input":"hi","truncation":"middle"}`, "truncation"},
		{"reasoning.effort not a string", `{"model":"m","input":"hi","reasoning":{"effort":1}}`, "reasoning.effort must be a string"},
		{"item not an object", `{"model":"m","input":["hi"]}`, "input[0] must be an object"},
		{"unknown item type", `{"model":"m","input":[{"type":"web_search_call","id":"w"}]}`, `input[0].type: item type "web_search_call" is not supported`},
		{"item type not a string", `{"model":"m","input":[{"type":1}]}`, "input[0].type must be a string"},
		{"message without role", `{"model":"m","input":[{"type":"message","content":"x"}]}`, "input[0].role is required"},
		{"message with a tool role", `{"model":"m","input":[{"role":"tool","content":"x"}]}`, "input[0].role"},
		{"message without content", `{"model":"m","input":[{"role":"user"}]}`, "input[0].content is required"},
		{"message content a number", `{"model":"m","input":[{"role":"user","content":5}]}`, "input[0].content must be"},
		{"call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id is required"},
		{"call without arguments", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f"}]}`, "input[0].arguments is required"},
		{"call arguments not a string", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":{}}]}`, "input[0].arguments must be a string"},
		{"output without output", `{"model":"m","input":[{"role":"user","content":"q"},{"type":"function_call_output","call_id":"c"}]}`, "input[1].output is required"},
		{"reasoning without summary", `{"model":"m","input":[{"type":"reasoning","content":[]}]}`, "input[0].summary is required"},
		{"tools not a list", `{"model":"m","input":"hi","tools":{}}`, "tools must be an array"},
		{"tool without type", `{"model":"m","input":"hi","tools":[{"name":"f"}]}`, "tools[0].type must be a string"},
		{"function tool without name", `{"model":"m","input":"hi","tools":[{"type":"function"}]}`, "tools[0].name must be a string"},
		{"function tool parameters not an object", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":[]}]}`, "tools[0]"},
		{"namespace member without name", `{"model":"m","input":"hi","tools":[{"type":"namespace","name":"n","tools":[{"type":"function"}]}]}`, "tools[0].tools[0].name must be a string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.body))
			if !errors.Is(err, openai.ErrBadRequest) {
				t.Fatalf("Parse error = %v, want one wrapping openai.ErrBadRequest", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Parse error = %q, want it to name %q", err, tc.field)
			}
		})
	}
}

func TestChatBodyRefusesAnEmptyConversation(t *testing.T) {
	t.Parallel()
	r, err := Parse([]byte(`{"model":"m","input":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ChatBody(); !errors.Is(err, openai.ErrBadRequest) || !strings.Contains(err.Error(), "input") {
		t.Fatalf("ChatBody error = %v, want a bad request naming input", err)
	}
}
