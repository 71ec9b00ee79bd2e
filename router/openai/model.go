package openai

import (
	"bytes"
	"encoding/json"
)

// ModelOf reads the model a request body names, for the paths whose body
// routing reads no further (vLLM's /tokenize and /detokenize): "" when
// the body names none (vLLM then uses the model it serves). Errors wrap
// ErrBadRequest.
func ModelOf(body []byte) (string, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return "", bad("the request body must be a JSON object")
	}
	var raw struct {
		Model json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return "", bad("malformed JSON: %s", jsonError(err))
	}
	var model string
	if err := str(raw.Model, "model", &model); err != nil {
		return "", err
	}
	return model, nil
}
