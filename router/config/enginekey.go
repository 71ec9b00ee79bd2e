package config

import (
	"fmt"
	"strings"
)

// EngineAuth holds the keys the router presents to engines started with
// vLLM's --api-key (or VLLM_API_KEY): on proxied requests, on the model
// listing it polls for LoRA adapters and on /metrics. A client's own
// Authorization header never reaches an engine.
type EngineAuth struct {
	// EngineAPIKey is the key for every model's engines (engine_api_key,
	// LLMGW_ENGINE_API_KEY, -engine-api-key); empty: none.
	EngineAPIKey string
	// ModelKeys override EngineAPIKey per model (a model block's
	// engine_api_key).
	ModelKeys map[string]string
}

// EngineKey is the key to present to the engines of model, "" for none.
func (a EngineAuth) EngineKey(model string) string {
	if k, ok := a.ModelKeys[model]; ok {
		return k
	}
	return a.EngineAPIKey
}

// setModelKey records a model block's engine_api_key.
func (a *EngineAuth) setModelKey(model string, key *string) {
	if key == nil {
		return
	}
	if a.ModelKeys == nil {
		a.ModelKeys = map[string]string{}
	}
	a.ModelKeys[model] = *key
}

// validate refuses keys that cannot travel as a bearer token: control
// characters would break the header, and surrounding spaces would be
// trimmed by the engine's HTTP server, so the key would never match.
func (a *EngineAuth) validate() []error {
	var errs []error
	check := func(where, k string) {
		if k != strings.TrimSpace(k) {
			errs = append(errs, fmt.Errorf("%s: the key has leading or trailing whitespace", where))
		}
		if strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			errs = append(errs, fmt.Errorf("%s: the key contains a control character", where))
		}
	}
	check("engine_api_key", a.EngineAPIKey)
	for m, k := range a.ModelKeys {
		check(fmt.Sprintf("model %q engine_api_key", m), k)
	}
	return errs
}
