package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEngineKeys(t *testing.T) {
	t.Parallel()
	const file = `
engine_api_key = "fleet-key"
model "qwen" {
  engine_api_key = "qwen-key"
}
model "open" {
  engine_api_key = ""
}
model "plain" {}
`
	path := filepath.Join(t.TempDir(), "router.hcl")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		environ []string
		args    []string
		want    map[string]string // model -> key
	}{
		{"file", nil, nil, map[string]string{"qwen": "qwen-key", "open": "", "plain": "fleet-key", "unlisted": "fleet-key"}},
		{"environment over the file", []string{"LLMGW_ENGINE_API_KEY=env-key"}, nil, map[string]string{"qwen": "qwen-key", "plain": "env-key"}},
		{"flag over the environment", []string{"LLMGW_ENGINE_API_KEY=env-key"}, []string{"-engine-api-key", "flag-key"}, map[string]string{"qwen": "qwen-key", "plain": "flag-key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			f := BindFlags(fs)
			if err := fs.Parse(append([]string{"-config", path}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			c, err := f.Resolve(tt.environ)
			if err != nil {
				t.Fatal(err)
			}
			for m, want := range tt.want {
				if got := c.EngineKey(m); got != want {
					t.Errorf("EngineKey(%q) = %q; want %q", m, got, want)
				}
			}
		})
	}
	if got := Default().EngineKey("any"); got != "" {
		t.Errorf("default engine key %q; want none", got)
	}
}

func TestEngineKeyValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		hcl, want string
	}{
		{`engine_api_key = " padded"`, "engine_api_key: the key has leading or trailing whitespace"},
		{"engine_api_key = \"a\\nb\"", "engine_api_key: the key contains a control character"},
		{"model \"m\" {\n engine_api_key = \"a\\tb\"\n}", `model "m" engine_api_key: the key contains a control character`},
	}
	for _, tt := range tests {
		c := Default()
		if err := c.ParseHCL([]byte(tt.hcl), "t.hcl"); err != nil {
			t.Fatalf("%s: %v", tt.hcl, err)
		}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v; want an error with %q", tt.hcl, err, tt.want)
		}
	}
}
