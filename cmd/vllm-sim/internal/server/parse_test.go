package server

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simtokenizer"
)

type testTok struct{ simtokenizer.Tokenizer }

func (testTok) RenderChat(c Chat) (string, error) {
	m := make([]simtokenizer.Message, len(c.Messages))
	for i, msg := range c.Messages {
		m[i] = simtokenizer.Message{Role: msg.Role, Content: msg.Content}
	}
	return simtokenizer.RenderChat(m, c.AddGenerationPrompt, c.ContinueFinal), nil
}

func testServer() *Server { return &Server{tok: testTok{}, opts: Options{MaxModelLen: 100}} }

func TestPromptForms(t *testing.T) {
	s := testServer()
	hello := s.tok.Encode("hello", true)
	tests := []struct {
		raw  string
		want [][]uint32
	}{
		{`"hello"`, [][]uint32{hello}},
		{`["hello","hello"]`, [][]uint32{hello, hello}},
		{`[1,2,3]`, [][]uint32{{1, 2, 3}}},
		{`[[1],[2,3]]`, [][]uint32{{1}, {2, 3}}},
	}
	for _, tt := range tests {
		got, err := s.prompts(json.RawMessage(tt.raw), true)
		if err != nil || len(got) != len(tt.want) {
			t.Errorf("prompts(%s) = %v, %v; want %v", tt.raw, got, err, tt.want)
			continue
		}
		for i := range got {
			if !slices.Equal(got[i], tt.want[i]) {
				t.Errorf("prompts(%s)[%d] = %v; want %v", tt.raw, i, got[i], tt.want[i])
			}
		}
	}
	for _, bad := range []string{``, `null`, `[]`, `[[]]`, `{"a":1}`, `[1,"a"]`, `3`} {
		if _, err := s.prompts(json.RawMessage(bad), true); err == nil {
			t.Errorf("prompts(%s) accepted", bad)
		}
	}
}

func TestNormalizeJoinsTextParts(t *testing.T) {
	for _, content := range []string{
		`[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]`,
		// vLLM drops empty text parts before the join and reads a bare
		// string as a text part.
		`[{"type":"text","text":"a"},{"type":"text","text":""},"","b"]`,
	} {
		msgs := []chatMessage{{Role: "user", Content: json.RawMessage(content)}}
		got, err := normalize(msgs)
		if err != nil || got[0].Content != "a\nb" {
			t.Errorf("normalize(%s) = %+v, %v; want content \"a\\nb\"", content, got, err)
		}
	}
}

// FuzzRequestParsing feeds arbitrary prompt and message JSON to the parsers a
// request body goes through; they must answer with a value or a 400, never
// panic.
func FuzzRequestParsing(f *testing.F) {
	f.Add(`"hi"`, `[{"role":"user","content":"hi"}]`)
	f.Add(`[[1,2],[3]]`, `[{"role":"user","content":[{"type":"text","text":"x"}]}]`)
	f.Add(`[-1]`, `[{"content":null}]`)
	s := testServer()
	f.Fuzz(func(t *testing.T, prompt, messages string) {
		if _, err := s.prompts(json.RawMessage(prompt), true); err != nil && err.status != 400 {
			t.Fatalf("prompt error status %d", err.status)
		}
		var msgs []chatMessage
		if json.Unmarshal([]byte(messages), &msgs) != nil {
			return
		}
		if _, err := s.renderChat([]byte(messages), msgs, nil, false, false); err != nil && err.status != 400 {
			t.Fatalf("messages error status %d", err.status)
		}
	})
}
