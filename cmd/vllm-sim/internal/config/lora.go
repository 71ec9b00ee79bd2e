package config

import (
	"encoding/json"
	"fmt"
	"strings"
)

// LoRAModule is one adapter served under its own model name. Its ID is
// vLLM's lora_int_id: adapters are numbered from 1 in the order given.
type LoRAModule struct {
	Name string `json:"name"`
	Path string `json:"path"`
	ID   int    `json:"-"`
}

// parseLoRAModule reads one --lora-modules value in either of vLLM's forms:
// name=path, or a JSON object with name and path.
func parseLoRAModule(v string) (LoRAModule, error) {
	var m LoRAModule
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			return m, fmt.Errorf("invalid JSON %q: %w", v, err)
		}
	} else {
		name, path, ok := strings.Cut(v, "=")
		if !ok {
			return m, fmt.Errorf("%q is not name=path", v)
		}
		m = LoRAModule{Name: name, Path: path}
	}
	if m.Name == "" || m.Path == "" {
		return m, fmt.Errorf("%q needs both a name and a path", v)
	}
	return m, nil
}
