package gateway

import (
	"fmt"
	"net/http"
)

// setEngineAuth makes h, the headers of a request about to be proxied to a
// replica, carry the router's key for that replica's engine (vLLM's
// --api-key) as a bearer token, or no Authorization at all when the model
// has none: the client's own Authorization (its key for this router) never
// reaches an engine.
func setEngineAuth(h http.Header, engineKey string) {
	if engineKey == "" {
		h.Del("Authorization")
		return
	}
	h.Set("Authorization", "Bearer "+engineKey)
}

// keyFor is the engine key for model's replicas, "" for none.
func (t *transport) keyFor(model string) string {
	if t.engineKey == nil {
		return ""
	}
	return t.engineKey(model)
}

// engineRefused explains a replica's 401: the router's engine key for its
// model is missing or wrong. It says which, never what the key is.
func engineRefused(replica, model string, sent http.Header) error {
	if sent.Get("Authorization") == "" {
		return fmt.Errorf("replica %s refused the router's engine key (401 Unauthorized): set engine_api_key for model %s to the engine's --api-key", replica, model)
	}
	return fmt.Errorf("replica %s refused the router's engine key (401 Unauthorized): the engine_api_key for model %s does not match the engine's --api-key", replica, model)
}
