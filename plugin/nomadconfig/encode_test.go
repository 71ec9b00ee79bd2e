package nomadconfig_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/plugin/msgpackdump"
	"github.com/llmgw/llmgw/plugin/nomadconfig"
	"github.com/llmgw/llmgw/plugin/proto/hclspec"
	"github.com/llmgw/llmgw/plugin/spec"
)

// sheetSpec is the schema of msgpackdump.ValueMappingExample, Nomad's
// value-mapping capture.
func sheetSpec() *hclspec.Spec {
	return spec.Object(map[string]*hclspec.Spec{
		"image":        spec.Attr("", "string", true),
		"args":         spec.Attr("", "list(string)", false),
		"count":        spec.Attr("", "number", false),
		"ratio":        spec.Attr("", "number", false),
		"tenth":        spec.Attr("", "number", false),
		"neg":          spec.Attr("", "number", false),
		"enabled":      spec.Optional("enabled", "bool", "true"),
		"dflt":         spec.Optional("dflt", "string", `"fallback"`),
		"labels":       spec.Attr("", "map(string)", false),
		"missing_str":  spec.Attr("", "string", false),
		"missing_list": spec.Attr("", "list(string)", false),
		"mount": spec.BlockList("", 0, 0, spec.Object(map[string]*hclspec.Spec{
			"source":   spec.Attr("", "string", false),
			"target":   spec.Attr("", "string", false),
			"readonly": spec.Attr("", "bool", false),
		})),
		"auth": spec.Block("", false, spec.Object(map[string]*hclspec.Spec{
			"username": spec.Attr("", "string", false),
			"password": spec.Attr("", "string", false),
		})),
		"port_map": spec.BlockAttrs("", "number", false),
		"interp":   spec.Attr("", "string", false),
	})
}

// TestEncodeLikeNomad reproduces the byte-for-byte capture of Nomad's
// config pipeline (msgpackdump.ValueMappingExample).
func TestEncodeLikeNomad(t *testing.T) {
	config := map[string]any{
		"image":    "docker.io/library/busybox:1.36",
		"args":     []string{"-c", "echo hi"},
		"count":    3,
		"ratio":    1.5,
		"tenth":    0.1,
		"neg":      -7,
		"labels":   map[string]string{"a": "b"},
		"mount":    []map[string]any{{"source": "/src", "target": "/dst"}, {"source": "/s2", "target": "/d2", "readonly": true}},
		"auth":     []map[string]any{{"username": "u", "password": "p"}},
		"port_map": []map[string]any{{"http": 8080}},
		"interp":   "${NOMAD_PORT_http}:${NOMAD_TASK_DIR}",
	}
	vars := map[string]string{"NOMAD_PORT_http": "23456", "NOMAD_TASK_DIR": "/local"}
	got, err := nomadconfig.EncodeConfig(sheetSpec(), config, vars)
	if err != nil {
		t.Fatal(err)
	}
	want := msgpackdump.Bytes(t, msgpackdump.ValueMappingExample)
	if !bytes.Equal(got, want) {
		t.Errorf("encoded\n%x\nwant\n%x", got, want)
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		schema *hclspec.Spec
		config map[string]any
		want   string
	}{
		{"unknown key", sheetSpec(), map[string]any{"image": "x", "imgae": "y"}, "imgae"},
		{"missing required", sheetSpec(), map[string]any{"args": []string{}}, `"image" is required`},
		{"wrong type", sheetSpec(), map[string]any{"image": "x", "count": "many"}, "count"},
		{"undefined variable", sheetSpec(), map[string]any{"image": "${NOMAD_NOPE}"}, "NOMAD_NOPE"},
		{"config without schema", nil, map[string]any{"a": 1}, "configuration not allowed"},
		{"empty type", spec.Object(map[string]*hclspec.Spec{"a": spec.Attr("", "", false)}), nil, "missing type expression"},
		{"unnamed attr in default", spec.Object(map[string]*hclspec.Spec{"a": spec.Default(spec.Attr("", "string", false), spec.Literal(`"x"`))}), nil, "missing name"},
		{"bad literal", spec.Object(map[string]*hclspec.Spec{"a": spec.Optional("a", "string", "runc")}), nil, "literal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := nomadconfig.EncodeConfig(tt.schema, tt.config, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

// FuzzDecoderSpec feeds arbitrary type expressions and literals to the
// schema converter, which parses both as HCL.
func FuzzDecoderSpec(f *testing.F) {
	f.Add("list(string)", `"x"`)
	f.Add("object({a=number})", "[1,2]")
	f.Add("map(", "${")
	f.Fuzz(func(t *testing.T, typ, lit string) {
		s := spec.Object(map[string]*hclspec.Spec{"a": spec.Default(spec.Attr("a", typ, false), spec.Literal(lit))})
		_, _ = nomadconfig.DecoderSpec(s)
		_, _ = nomadconfig.EncodeConfig(s, map[string]any{"a": lit}, nil)
	})
}
