package enginetok

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// response is vLLM's TokenizeResponse; token_strs is not asked for.
type response struct {
	Count       *int      `json:"count"`
	MaxModelLen int       `json:"max_model_len"`
	Tokens      *[]uint64 `json:"tokens"`
}

// ParseResponse reads a /tokenize response body: its token ids, checked
// against its count, each within uint32 (vLLM's ids are vocabulary
// indices), at most maxTokens of them (0: no limit). Anything else is an
// error that names the problem.
func ParseResponse(body []byte, maxTokens int) ([]uint32, error) {
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("tokenize response: %w", err)
	}
	if r.Tokens == nil {
		return nil, errors.New("tokenize response: no tokens field")
	}
	toks := *r.Tokens
	if r.Count != nil && *r.Count != len(toks) {
		return nil, fmt.Errorf("tokenize response: count %d but %d tokens", *r.Count, len(toks))
	}
	if maxTokens > 0 && len(toks) > maxTokens {
		return nil, fmt.Errorf("tokenize response: %d tokens, more than the %d allowed", len(toks), maxTokens)
	}
	ids := make([]uint32, len(toks))
	for i, t := range toks {
		if t > math.MaxUint32 {
			return nil, fmt.Errorf("tokenize response: token %d is %d, not a token id", i, t)
		}
		ids[i] = uint32(t)
	}
	return ids, nil
}
