package jobs

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// roundTrip parses a variable file as the agent does and returns each
// attribute's string value.
func roundTrip(t testing.TB, file string) map[string]string {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(file), "vars.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("variable file does not parse: %v\n%s", diags, file)
	}
	out := map[string]string{}
	for name, a := range f.Body.(*hclsyntax.Body).Attributes {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatalf("%s: %v\n%s", name, diags, file)
		}
		out[name] = v.AsString()
	}
	return out
}

func TestVarFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		pairs   []string
		want    map[string]string
		wantErr string
	}{
		{name: "none", want: map[string]string{}},
		{name: "number and string", pairs: []string{"routers=1", "consul_address=127.0.0.1:18500"},
			want: map[string]string{"routers": "1", "consul_address": "127.0.0.1:18500"}},
		{name: "value with =", pairs: []string{"args=a=b"}, want: map[string]string{"args": "a=b"}},
		{name: "empty value", pairs: []string{"x="}, want: map[string]string{"x": ""}},
		{name: "template sequences stay literal", pairs: []string{`x=${var.y} %{ if } "q" \ `},
			want: map[string]string{"x": `${var.y} %{ if } "q" \ `}},
		{name: "control characters", pairs: []string{"x=a\nb\tc\x01"}, want: map[string]string{"x": "a\nb\tc\x01"}},
		{name: "no =", pairs: []string{"routers"}, wantErr: `-var "routers": want name=value`},
		{name: "bad name", pairs: []string{"1x=2"}, wantErr: `"1x" is not a variable name`},
		{name: "name with dot", pairs: []string{"a.b=2"}, wantErr: `"a.b" is not a variable name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			file, err := VarFile(tt.pairs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v; want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := roundTrip(t, file)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v; want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q; want %q", k, got[k], v)
				}
			}
		})
	}
}

// FuzzVarFile checks that any value VarFile accepts comes back unchanged
// from HCL's parser, so no value can inject HCL or a template.
func FuzzVarFile(f *testing.F) {
	for _, s := range []string{"1", "127.0.0.1:8500", "${x}", "%{ if }", `"\`, "a\nb", "$${", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		if !utf8.ValidString(value) {
			return // HCL sources are UTF-8
		}
		want := cty.StringVal(value).AsString() // HCL strings are NFC-normalised
		file, err := VarFile([]string{"v=" + value})
		if err != nil {
			t.Fatal(err)
		}
		if got := roundTrip(t, file)["v"]; got != want {
			t.Fatalf("round trip %q -> %q via %s", value, got, file)
		}
	})
}
