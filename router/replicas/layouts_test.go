package replicas

import (
	"testing"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/kvgroups"
	"github.com/llmgw/llmgw/router/load"
)

// A replica's Consul meta declares its layout when it joins, before any
// event, read with the default block size where the replica lists none;
// a bad declaration is ignored; leaving forgets it.
func TestDeclaredLayouts(t *testing.T) {
	reg := kvgroups.NewRegistry()
	sink := ingest.New(index.NewModels(index.Options{}), ingest.Options{Layouts: reg})
	set := New(sink, load.NewTracker(), Options{})
	set.Replace([]Replica{
		{ID: "a/1", Model: "m", Address: "127.0.0.1:1", KVCacheGroups: "full,mamba"},
		{ID: "b/1", Model: "m", Address: "127.0.0.1:2", KVCacheGroups: "full,linear"},
		{ID: "c/1", Model: "m", Address: "127.0.0.1:3"},
		{ID: "d/1", Model: "m", Address: "127.0.0.1:4", BlockSize: 32, KVCacheGroups: "full,mamba"},
	})
	if l := reg.Of("a/1"); !l.Mamba() || l.Groups[0].BlockSize != 16 {
		t.Errorf("a/1 layout %v; want the declared full,mamba with 16-token blocks", l)
	}
	if l := reg.Of("d/1"); !l.Mamba() || l.Groups[0].BlockSize != 32 {
		t.Errorf("d/1 layout %v; want the declared full,mamba with its 32-token blocks", l)
	}
	if reg.Of("b/1") != nil || reg.Of("c/1") != nil {
		t.Error("a bad or absent declaration gave a layout")
	}
	set.Replace(nil)
	if reg.Any() {
		t.Error("layouts kept after the replicas left")
	}
}
