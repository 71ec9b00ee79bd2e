package enginemetrics

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// maxAdapterName bounds an adapter name; longer ones make the listing an
// error (vLLM's model names are short; this catches a broken replica).
const maxAdapterName = 1 << 10

// ParseAdapters reads an OpenAI model listing (vLLM's GET /v1/models) and
// returns the LoRA adapters in it, sorted: the entries with a parent (vLLM
// sets parent to the base model for adapters and null for base models).
func ParseAdapters(r io.Reader) ([]string, error) {
	var list struct {
		Data []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r).Decode(&list); err != nil {
		return nil, fmt.Errorf("model listing: %w", err)
	}
	if list.Data == nil {
		return nil, fmt.Errorf("model listing has no data array")
	}
	var out []string
	for i, m := range list.Data {
		if m.Parent == nil || *m.Parent == "" {
			continue
		}
		if m.ID == "" || len(m.ID) > maxAdapterName {
			return nil, fmt.Errorf("model listing entry %d: adapter id of %d bytes", i, len(m.ID))
		}
		out = append(out, m.ID)
	}
	sort.Strings(out)
	return out, nil
}
