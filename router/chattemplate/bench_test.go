package chattemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRender measures rendering real templates (request decoding and
// normalisation included) for the tool-calling conversation.
func BenchmarkRender(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(testdataDir(), "templates.json"))
	if err != nil {
		b.Skipf("templates absent: run `make testdata`: %v", err)
	}
	var sources map[string]string
	if err := json.Unmarshal(raw, &sources); err != nil {
		b.Fatal(err)
	}
	convRaw, err := os.ReadFile(filepath.Join("testdata", "conversations.json"))
	if err != nil {
		b.Fatal(err)
	}
	var convs []json.RawMessage
	if err := json.Unmarshal(convRaw, &convs); err != nil {
		b.Fatal(err)
	}
	req, err := ParseRequest(convs[5]) // tool-round-trip
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"library/llama3.1:8b", "library/qwen3:0.6b", "library/smollm2:135m"} {
		tmpl, err := New(sources[name], map[string]string{"bos_token": "<s>", "eos_token": "</s>"})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(name), func(b *testing.B) {
			for b.Loop() {
				if _, err := tmpl.Render(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
