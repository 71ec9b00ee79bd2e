package peers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestList: the reporting peers by id, each with its newest report's
// replicas and in-flight sum and when it arrived.
func TestList(t *testing.T) {
	t.Parallel()
	tab, _, now := newTestTable(t)
	if l := tab.List(); len(l) != 0 {
		t.Fatalf("no peers: %v", l)
	}
	tab.Put(msg("r2", 1, Replica{ID: "a", InFlight: 2}, Replica{ID: "b", InFlight: 3}))
	tab.Put(msg("r1", 1, Replica{ID: "a", InFlight: 1}))
	want := []Peer{{ID: "r1", LastSeen: *now, Replicas: 1, InFlight: 1}, {ID: "r2", LastSeen: *now, Replicas: 2, InFlight: 5}}
	if d := cmp.Diff(want, tab.List()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
