package main

import (
	"net/http"
	"testing"
)

// TestModelsAsVLLM: /v1/models lists vLLM's ModelCard: a base model with
// its path as root, the engine's max_model_len, no parent and one
// ModelPermission; an adapter with its path as root, the first served
// name as parent and a null max_model_len
// (OpenAIServingModels.show_available_models).
func TestModelsAsVLLM(t *testing.T) {
	p := startSim(t, nil, "--served-model-name", "llama", "--max-model-len", "4096", "--enable-lora", "--lora-modules", "ad=/adapters/ad")
	st, _, body := request(t, p, http.MethodGet, "/v1/models", "")
	data, _ := body["data"].([]any)
	if st != 200 || body["object"] != "list" || len(data) != 2 {
		t.Fatalf("%d %v", st, body)
	}
	base, _ := data[0].(map[string]any)
	adapter, _ := data[1].(map[string]any)
	perms, _ := base["permission"].([]any)
	perm, _ := firstOf(perms).(map[string]any)
	switch {
	case base["id"] != "llama" || base["root"] != "sim-model" || base["max_model_len"] != float64(4096) || base["parent"] != nil || base["owned_by"] != "vllm":
		t.Errorf("base card %v", base)
	case perm["object"] != "model_permission" || perm["allow_sampling"] != true || perm["organization"] != "*" || perm["group"] != nil:
		t.Errorf("permission %v", perm)
	}
	if adapter["id"] != "ad" || adapter["root"] != "/adapters/ad" || adapter["parent"] != "llama" || adapter["max_model_len"] != nil {
		t.Errorf("adapter card %v; want max_model_len null", adapter)
	}
	if v, ok := adapter["max_model_len"]; !ok || v != nil {
		t.Errorf("adapter max_model_len %v present %v; want a null", v, ok)
	}
}

func firstOf(v []any) any {
	if len(v) == 0 {
		return nil
	}
	return v[0]
}
