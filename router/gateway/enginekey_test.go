package gateway

import (
	"net/http"
	"strings"
	"testing"
)

func TestSetEngineAuth(t *testing.T) {
	tests := []struct {
		name, client, key, want string
	}{
		{"no key drops the client's header", "Bearer tenant-key", "", ""},
		{"a key replaces the client's header", "Bearer tenant-key", "engine", "Bearer engine"},
		{"a key is sent when the client sent none", "", "engine", "Bearer engine"},
		{"nothing stays nothing", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.client != "" {
				h.Set("Authorization", tt.client)
			}
			setEngineAuth(h, tt.key)
			if got := h.Values("Authorization"); strings.Join(got, ",") != tt.want {
				t.Errorf("Authorization %q; want %q", got, tt.want)
			}
		})
	}
}

func TestEngineRefusedNamesTheFixNotTheKey(t *testing.T) {
	none := engineRefused("a/main", "qwen", http.Header{})
	wrong := engineRefused("a/main", "qwen", http.Header{"Authorization": {"Bearer s3cret"}})
	if !strings.Contains(none.Error(), "set engine_api_key for model qwen") || !strings.Contains(none.Error(), "a/main") {
		t.Errorf("without a key: %v", none)
	}
	if !strings.Contains(wrong.Error(), "does not match") || strings.Contains(wrong.Error(), "s3cret") {
		t.Errorf("with a wrong key: %v", wrong)
	}
}
