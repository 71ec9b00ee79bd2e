package server

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/kvgroups"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/replicas"
)

// A replica's Consul meta declares its layout when it joins, before any
// event; a bad declaration is ignored; leaving forgets it.
func TestDeclaredLayouts(t *testing.T) {
	reg := kvgroups.NewRegistry()
	ms := index.NewModels(index.Options{})
	var set *replicas.Set
	sink := ingest.NewSinkWith(ms, func(id string) (string, bool) { return set.ModelOf(id) }, ingest.Options{Layouts: reg})
	kv := declaringKV{Sink: sink, layouts: reg, replica: func(id string) (replicas.Replica, bool) { return set.Get(id) }, log: hclog.NewNullLogger()}
	set = replicas.New(kv, load.NewTracker(), replicas.Options{})
	set.Replace([]replicas.Replica{
		{ID: "a/1", Model: "m", Address: "127.0.0.1:1", KVCacheGroups: "full,mamba"},
		{ID: "b/1", Model: "m", Address: "127.0.0.1:2", KVCacheGroups: "full,linear"},
		{ID: "c/1", Model: "m", Address: "127.0.0.1:3"},
	})
	if l := reg.Of("a/1"); !l.Mamba() || l.Groups[0].BlockSize != 16 {
		t.Errorf("a/1 layout %v; want the declared full,mamba with 16-token blocks", l)
	}
	if reg.Of("b/1") != nil || reg.Of("c/1") != nil {
		t.Error("a bad or absent declaration gave a layout")
	}
	set.Replace(nil)
	if reg.Any() {
		t.Error("layouts kept after the replicas left")
	}
}
