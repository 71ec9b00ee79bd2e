package ingest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

// TestDrivers: each driver with the replicas whose live state it holds,
// sorted; a replica dropped from the set leaves its driver's list.
func TestDrivers(t *testing.T) {
	known := map[string]string{"a/1": "m", "a/2": "m", "b/1": "m"}
	s := NewSink(index.NewModels(index.Options{}), func(id string) (string, bool) { m, ok := known[id]; return m, ok }, nil)
	gpu := []kvwire.Group{group(0, kvwire.TierGPU, []uint64{1})}
	s.ApplyUpdate(&kvwire.Update{Driver: "d1", Epoch: 1, Snapshot: true, Replicas: []kvwire.Replica{{ID: "a/2", Groups: gpu}, {ID: "a/1", Groups: gpu}}})
	s.ApplyUpdate(&kvwire.Update{Driver: "d2", Epoch: 1, Snapshot: true, Replicas: []kvwire.Replica{{ID: "b/1", Groups: gpu}}})
	if d := cmp.Diff(map[string][]string{"d1": {"a/1", "a/2"}, "d2": {"b/1"}}, s.Drivers()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	s.Drop("b/1")
	if d := cmp.Diff(map[string][]string{"d1": {"a/1", "a/2"}}, s.Drivers()); d != "" {
		t.Errorf("after Drop (-want +got):\n%s", d)
	}
}
