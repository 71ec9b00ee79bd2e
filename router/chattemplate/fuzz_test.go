package chattemplate

import (
	"testing"
)

// FuzzRender compiles and renders arbitrary templates with arbitrary request
// bodies: errors are fine, panics are not.
func FuzzRender(f *testing.F) {
	f.Add(`{% for m in messages %}{{ m.role }}: {{ m.content }}{% endfor %}{% if tools %}{{ tools | tojson(indent=2) }}{% endif %}`,
		`{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`)
	f.Add(`{{- messages[0]['content'] | trim }}{%- if add_generation_prompt %}<gen>{% endif %}\n`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"continue_final_message":true,"add_generation_prompt":false}`)
	f.Add(`{% raw %}{{{% endraw %}{# c #}{{ x | tojson }}{{ strftime_now("%d") }}`, `{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}]}`)
	f.Fuzz(func(t *testing.T, src, body string) {
		tmpl, err := New(src, map[string]string{"bos_token": "<s>"})
		if err != nil {
			return
		}
		req, err := ParseRequest([]byte(body))
		if err != nil {
			req = Request{Messages: []byte(body)}
		}
		_, _ = tmpl.Render(req)
	})
}

// FuzzPrepareSource checks the source rewrites alone on arbitrary text.
func FuzzPrepareSource(f *testing.F) {
	f.Add("{{ a | tojson }}{% if x %} {{ y }}{% endif %}\n")
	f.Add("{% raw %}{{ x | tojson(indent=4) }}{% endraw %}")
	f.Add("{{ a['b'] | tojson(separators=(',', ':')) }}{{")
	f.Fuzz(func(t *testing.T, src string) {
		rewriteTojson(prepareSource(src))
	})
}
