package scalebench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/index"
)

// TestSnapshotSweep: each point applies both generations of a fleet's
// snapshots (the index then holds exactly the second), its figures are
// medians within their range, and the table names every point and the
// growth of both curves.
func TestSnapshotSweep(t *testing.T) {
	ps, err := SnapshotSweep(Config{Snapshots: []int{4, 16}, Runs: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 {
		t.Fatalf("%d points; want 2", len(ps))
	}
	for _, p := range ps {
		if p.JoinMinMS <= 0 || p.JoinMS < p.JoinMinMS || p.JoinMaxMS < p.JoinMS || p.ResyncMinMS <= 0 || p.ResyncMS < p.ResyncMinMS || p.ResyncMaxMS < p.ResyncMS {
			t.Errorf("point %+v: medians must lie within positive ranges", p)
		}
	}
	var b bytes.Buffer
	WriteSnapshots(&b, ps)
	for _, want := range []string{"| 4 |", "| 16 |", "join ", "resync ", "log-log slope"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := SnapshotSweep(Config{Snapshots: []int{4}}); err == nil {
		t.Error("a sweep of zero runs: got nil error")
	}
}

// TestFleetSnapshotsApply: the second generation replaces the first
// exactly: each replica keeps half its own keys and the shared ones.
func TestFleetSnapshotsApply(t *testing.T) {
	ix := index.New(index.Options{})
	for gen := range 2 {
		if _, err := applyFleet(ix, fleetSnapshots(8, gen)); err != nil {
			t.Fatal(err)
		}
	}
	if st := ix.Stats(); st.Holders != 8 || st.Keys != 8*snapshotOwn+snapshotShared {
		t.Errorf("stats %+v; want 8 holders and %d keys", st, 8*snapshotOwn+snapshotShared)
	}
	if gpu, _ := ix.ReplicaBlocks(replicaID(3)); gpu != snapshotOwn+snapshotShared {
		t.Errorf("replica 3 holds %d blocks; want %d", gpu, snapshotOwn+snapshotShared)
	}
}

// TestTargetSlope: the slope of a curve doubling per quadrupling of
// replicas is 0.5, of one growing 16-fold 2; without all three points
// there is none.
func TestTargetSlope(t *testing.T) {
	ps := []SnapshotPoint{{Replicas: 64, JoinMS: 100, ResyncMS: 100}, {Replicas: 256, JoinMS: 1, ResyncMS: 1},
		{Replicas: 1024, JoinMS: 2, ResyncMS: 16}, {Replicas: 4096, JoinMS: 4, ResyncMS: 256}}
	for _, c := range []struct {
		resync bool
		want   float64
	}{{false, 0.5}, {true, 2}} {
		if s, ok := TargetSlope(ps, c.resync); !ok || s < c.want-0.001 || s > c.want+0.001 {
			t.Errorf("resync %v: slope %.3f, %v; want %.1f", c.resync, s, ok, c.want)
		}
		if _, ok := TargetSlope(ps[:3], c.resync); ok {
			t.Errorf("resync %v: a slope without the 4,096 point", c.resync)
		}
	}
}
