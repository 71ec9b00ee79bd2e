package anthropic

import (
	"testing"

	"github.com/llmgw/llmgw/router/openai"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(req(`"system":[{"type":"text","text":"S"}],"stream":true`, `[{"role":"user","content":"q"}]`)))
	f.Add([]byte(req(`"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"any"}`, `[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"tool_use","id":"a","name":"f","input":{"x":1.5}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"r"},{"type":"image","source":{"type":"url","url":"u"}}]}]}]`)))
	f.Add([]byte(req("", `[{"role":"assistant","content":[{"type":"tool_result","content":[{"k":["é",null,1e400]}]}]}]`)))
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"system","content":"s"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Parse(body)
		if err != nil {
			return
		}
		chat, err := r.ChatBody()
		if err != nil {
			return
		}
		if _, err := openai.Parse(openai.Chat, chat); err != nil {
			t.Fatalf("ChatBody of %s is %s, which openai.Parse refuses: %v", body, chat, err)
		}
	})
}

func FuzzUsage(f *testing.F) {
	f.Add([]byte(`{"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":0}}}`))
	f.Add([]byte(`{"type":"message_delta","usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":2}}`))
	f.Add([]byte(`{"type":"message_start","message":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, out, cached, ok := Usage(data)
		if !ok && (in != 0 || out != 0 || cached != 0) {
			t.Fatalf("Usage(%s) = %d, %d, %d without ok", data, in, out, cached)
		}
	})
}

// BenchmarkChatBody converts a four-turn tool-using conversation.
func BenchmarkChatBody(b *testing.B) {
	body := []byte(req(`"system":[{"type":"text","text":"You are a careful coding agent."}],"tools":[{"name":"read_file","description":"Read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}],"stream":true`,
		`[{"role":"user","content":"Open main.go and tell me what it does."},`+
			`{"role":"assistant","content":[{"type":"thinking","thinking":"I should read the file.","signature":"s"},{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"main.go"}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"package main\n\nfunc main() { println(\"hi\") }"}]}]},`+
			`{"role":"assistant","content":[{"type":"text","text":"It prints hi."}]},`+
			`{"role":"user","content":"Thanks; now make it print hello."}]`))
	b.ReportAllocs()
	for b.Loop() {
		r, err := Parse(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.ChatBody(); err != nil {
			b.Fatal(err)
		}
	}
}
