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
	f.Add(`{% for m in messages %}{% for p in m.content %}{{ p.text }}{% endfor %}{{ m.reasoning_content }}{% endfor %}{{ documents | tojson }}{{ enable_thinking }}`,
		`{"messages":[{"role":"user","content":["a",{"type":"refusal","refusal":"r"},{"type":"tool_reference","name":"f"}]},{"role":"tool","content":[{"type":"text","text":"x"}]},{"role":"assistant","reasoning_content":"t","tool_calls":[]}],"reasoning_effort":"none","documents":[{"t":"x"}],"chat_template_kwargs":{"flag":"auto","tools":[{"name":"g"}]}}`)
	f.Add(`{{ tools | tojson }}`, `{"messages":[{"role":"developer","content":null}],"tools":[{"function":{"name":"f","strict":true},"defer_loading":false}]}`)
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

// FuzzPrepareSource checks the source rewrites and the content-format
// detection alone on arbitrary text.
func FuzzPrepareSource(f *testing.F) {
	f.Add("{{ a | tojson }}{% if x %} {{ y }}{% endif %}\n")
	f.Add("{% raw %}{{ x | tojson(indent=4) }}{% endraw %}")
	f.Add("{{ a['b'] | tojson(separators=(',', ':')) }}{{")
	f.Add("{% set l = messages[1:] | list %}{% for m in l if m %}{% for c in m['content'][:2] | x %}{% endfor %}{% endfor %}{% set s = 'it\\'s' %}")
	f.Fuzz(func(t *testing.T, src string) {
		rewriteTojson(prepareSource(src))
		detectFormat(src)
	})
}
