package gateway

import (
	"encoding/json"
	"testing"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/replicas"
)

// TestModelsRootAndMaxModelLen: /v1/models lists vLLM's root and
// max_model_len where the replicas advertise them (consul.MetaRoot,
// MetaMaxModelLen): the first root, the smallest max_model_len, the
// longest context every replica takes; a model whose replicas advertise
// neither has neither field, rather than a zero.
func TestModelsRootAndMaxModelLen(t *testing.T) {
	models := index.NewModels(index.Options{})
	tracker := load.NewTracker(load.WithPrefillRate(0))
	set := replicas.New(ingest.New(models, ingest.Options{}), tracker, replicas.Options{})
	set.Replace([]replicas.Replica{
		{ID: "a", Model: "big", Address: "127.0.0.1:1", BlockSize: 16, Root: "org/big-70b", MaxModelLen: 8192},
		{ID: "b", Model: "big", Address: "127.0.0.1:2", BlockSize: 16, MaxModelLen: 4096},
		{ID: "c", Model: "plain", Address: "127.0.0.1:3", BlockSize: 16},
	})
	h := buildHarness(t, set, tracker, models, nil)
	_, b := get(t, h.srv.URL+"/v1/models")
	var list struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil || len(list.Data) != 2 {
		t.Fatalf("%s: %v", b, err)
	}
	big, plain := list.Data[0], list.Data[1]
	if big["id"] != "big" || big["root"] != "org/big-70b" || big["max_model_len"] != float64(4096) {
		t.Errorf("big: %v; want root org/big-70b, max_model_len 4096", big)
	}
	_, hasRoot := plain["root"]
	_, hasLen := plain["max_model_len"]
	if plain["id"] != "plain" || hasRoot || hasLen {
		t.Errorf("plain: %v; want no root and no max_model_len", plain)
	}
}
