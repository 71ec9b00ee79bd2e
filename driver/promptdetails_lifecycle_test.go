package driver_test

import (
	"strings"
	"testing"
)

// TestPromptTokensDetailsFlag: the engine serving the API gets vLLM's
// --enable-prompt-tokens-details unless the task config opts out, so its
// usage reports cached tokens.
func TestPromptTokensDetailsFlag(t *testing.T) {
	h := launch(t, simBin)
	tests := []struct {
		name string
		cfg  map[string]any
		want bool
	}{
		{"default", map[string]any{"model": "sim", "args": []string{"--sim-latency=false"}}, true},
		{"opted out", map[string]any{"model": "sim", "prompt_tokens_details": false, "args": []string{"--sim-latency=false"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := newTask(t, h, tt.cfg)
			start(t, h, task.Config)
			id := task.Config.GetId()
			cmdline := engineCmdline(t, h, id)
			stop(t, h, id)
			if got := strings.Contains(cmdline, " --enable-prompt-tokens-details "); got != tt.want {
				t.Errorf("command line %q: --enable-prompt-tokens-details present %v; want %v", cmdline, got, tt.want)
			}
		})
	}
}
