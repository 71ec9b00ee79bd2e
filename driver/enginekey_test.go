package driver

import (
	"slices"
	"strings"
	"testing"
)

func TestWithEngineKey(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		var_ string
		want []string
		err  string
	}{
		{"no api_key_env", []string{"A=1"}, "", []string{"A=1"}, ""},
		{"VLLM_API_KEY itself", []string{"VLLM_API_KEY=k"}, "VLLM_API_KEY", []string{"VLLM_API_KEY=k"}, ""},
		{"another name becomes VLLM_API_KEY", []string{"ENGINE_KEY=k", "PATH=/bin"}, "ENGINE_KEY",
			[]string{"ENGINE_KEY=k", "PATH=/bin", "VLLM_API_KEY=k"}, ""},
		{"it replaces a VLLM_API_KEY already there", []string{"ENGINE_KEY=k", "VLLM_API_KEY=old"}, "ENGINE_KEY",
			[]string{"ENGINE_KEY=k", "VLLM_API_KEY=k"}, ""},
		{"missing", []string{"PATH=/bin"}, "ENGINE_KEY", nil, "the task environment has no non-empty ENGINE_KEY"},
		{"empty", []string{"ENGINE_KEY="}, "ENGINE_KEY", nil, "no non-empty ENGINE_KEY"},
		{"a longer name is not the variable", []string{"ENGINE_KEY_OLD=k"}, "ENGINE_KEY", nil, "no non-empty ENGINE_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withEngineKey(tt.env, tt.var_)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, %v; want an error with %q", got, err, tt.err)
				}
				if strings.Contains(err.Error(), "=k") {
					t.Errorf("the error shows the key: %v", err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestAPIKeyEnvConfig(t *testing.T) {
	ports := map[string]bool{"http": true}
	tests := []struct {
		name string
		cfg  map[string]any
		want string // "" when valid
	}{
		{"set", map[string]any{"model": "m", "api_key_env": "VLLM_API_KEY"}, ""},
		{"bad name", map[string]any{"model": "m", "api_key_env": "A=B"}, "api_key_env: invalid variable name"},
		{"with --api-key in args", map[string]any{"model": "m", "api_key_env": "K", "args": []string{"--api-key", "x"}}, "args also pass --api-key"},
		{"with --api-key= in args", map[string]any{"model": "m", "api_key_env": "K", "args": []string{"--api-key=x"}}, "args also pass --api-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := decodeTask(t, tt.cfg)
			if err == nil {
				err = tc.validate(ports)
			}
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v; want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}
