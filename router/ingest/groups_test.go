package ingest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/kvgroups"
)

func kvGroup(g int, add []uint64, del ...uint64) kvwire.Group {
	return kvwire.Group{Tier: kvwire.TierGPU, Add: add, Del: del, KVGroup: g}
}

// Groups 0 and 1 storing the same keys are indexed apart: group 1 (the
// sliding window) removing both leaves group 0's, and the hit follows
// the engine's rule; a group of another block size is not indexed.
func TestSinkGroups(t *testing.T) {
	known := map[string]string{"a/1": "m", "b/1": "m"}
	ms, reg := index.NewModels(index.Options{}), kvgroups.NewRegistry()
	s := NewSinkWith(ms, func(id string) (string, bool) { m, ok := known[id]; return m, ok }, Options{Layouts: reg})
	x := kvgroups.NewIndex(ms, reg)
	layout := []kvwire.KVGroupSpec{
		{Index: 0, Kind: kvwire.KindFull, BlockSize: 16},
		{Index: 1, Kind: kvwire.KindSlidingWindow, Window: 17, BlockSize: 16},
		{Index: 2, Kind: kvwire.KindFull, BlockSize: 32},
	}
	keys := []uint64{1, 2, 3}
	hits := func() map[string]int {
		out := map[string]int{}
		for i, m := range x.LookupReplicas("m", keys, 1, []string{"a/1", "b/1"}, nil) {
			out[[]string{"a/1", "b/1"}[i]] = m.Blocks
		}
		return out
	}
	steps := []struct {
		name string
		u    kvwire.Update
		full map[string]int // holders of keys in the model's own index
		want map[string]int // the rule's hits
	}{
		{"snapshot", kvwire.Update{Version: 2, Driver: "d", Epoch: 1, Snapshot: true, Replicas: []kvwire.Replica{
			{ID: "a/1", BlockSize: 16, Layout: layout, Groups: []kvwire.Group{kvGroup(0, keys), kvGroup(1, keys), kvGroup(2, []uint64{9})}},
		}}, map[string]int{"a/1": 3}, map[string]int{"a/1": 3, "b/1": 0}},
		{"window removes its blocks", kvwire.Update{Version: 2, Driver: "d", Epoch: 1, Seq: 1, Replicas: []kvwire.Replica{
			{ID: "a/1", BlockSize: 16, Groups: []kvwire.Group{kvGroup(1, nil, 2, 3)}},
		}}, map[string]int{"a/1": 3}, map[string]int{"a/1": 1, "b/1": 0}},
		{"a version 1 driver", kvwire.Update{Version: 1, Driver: "d2", Epoch: 1, Snapshot: true, Replicas: []kvwire.Replica{
			{ID: "b/1", BlockSize: 16, Groups: []kvwire.Group{kvGroup(0, keys[:2])}},
		}}, map[string]int{"a/1": 3, "b/1": 2}, map[string]int{"a/1": 1, "b/1": 2}},
		{"reset empties every group", kvwire.Update{Version: 2, Driver: "d", Epoch: 1, Seq: 2, Replicas: []kvwire.Replica{
			{ID: "a/1", BlockSize: 16, Reset: true, Groups: []kvwire.Group{kvGroup(0, keys)}},
		}}, map[string]int{"a/1": 3, "b/1": 2}, map[string]int{"a/1": 0, "b/1": 2}},
	}
	for _, st := range steps {
		s.ApplyUpdate(&st.u)
		if diff := cmp.Diff(st.full, holders(ms, "m", keys...)); diff != "" {
			t.Errorf("%s: model index (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.want, hits()); diff != "" {
			t.Errorf("%s: hits (-want +got):\n%s", st.name, diff)
		}
	}
	if got := s.Stats().OtherBlockSize; got != 1 {
		t.Errorf("%d keys of another block size; want the 1 not indexed", got)
	}
	s.Drop("a/1")
	if reg.Of("a/1") != nil {
		t.Error("layout kept for a dropped replica")
	}
}
