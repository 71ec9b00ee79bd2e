package enginetok

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/router/openai"
)

// TestChatTemplateKwargs: documents and reasoning_effort, which
// TokenizeChatRequest has no field for, reach the engine's template
// through chat_template_kwargs as vLLM's chat path merges them
// (ChatCompletionRequest.build_chat_params; the router's own rendering is
// router/chattemplate.templateArgs).
func TestChatTemplateKwargs(t *testing.T) {
	t.Parallel()
	const msgs = `"messages":[{"role":"user","content":"q"}]`
	for _, tc := range []struct {
		name, extra string
		want        map[string]any // nil: no chat_template_kwargs sent
	}{
		{"neither", ``, nil},
		{"client kwargs as sent", `,"chat_template_kwargs":{"x":1}`, map[string]any{"x": 1.0}},
		{"documents", `,"documents":[{"title":"t","text":"d"}]`, map[string]any{"documents": []any{map[string]any{"title": "t", "text": "d"}}}},
		{"documents replace the kwargs'", `,"documents":[{"text":"d"}],"chat_template_kwargs":{"documents":[],"x":1}`,
			map[string]any{"documents": []any{map[string]any{"text": "d"}}, "x": 1.0}},
		{"reasoning_effort sets enable_thinking", `,"reasoning_effort":"low"`, map[string]any{"reasoning_effort": "low", "enable_thinking": true}},
		{"none turns thinking off", `,"reasoning_effort":"none"`, map[string]any{"reasoning_effort": "none", "enable_thinking": false}},
		{"the kwargs' enable_thinking wins", `,"reasoning_effort":"none","chat_template_kwargs":{"enable_thinking":true}`,
			map[string]any{"reasoning_effort": "none", "enable_thinking": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := parse(t, openai.Chat, `{"model":"m",`+msgs+tc.extra+`}`)
			b, err := requestBody("m", r)
			if err != nil {
				t.Fatal(err)
			}
			var sent struct {
				Kwargs          map[string]any `json:"chat_template_kwargs"`
				Documents       any            `json:"documents"`
				ReasoningEffort any            `json:"reasoning_effort"`
			}
			if err := json.Unmarshal(b, &sent); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sent.Kwargs, tc.want) || sent.Documents != nil || sent.ReasoningEffort != nil {
				t.Errorf("sent %s; want chat_template_kwargs %v and no documents or reasoning_effort fields", b, tc.want)
			}
		})
	}
}
