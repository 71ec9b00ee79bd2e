package ingest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func keys(from, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(from + i)
	}
	return out
}

// TestRefusedRetry: a refused replica's driver is asked for a snapshot
// once its backoff has passed and its index has room, once per refusal;
// a refusal that no longer stands (the replica left) asks nothing.
func TestRefusedRetry(t *testing.T) {
	f := newPendingFixture(Options{})
	for _, id := range []string{"a/1", "b/1", "c/1", "d/1"} {
		f.known[id] = "m"
	}
	f.ms.For("m").SetMaxKeys(32) // room while fewer than 30 keys
	f.send("da", true, rep("a/1", keys(0, 20)))
	for _, d := range []string{"db", "dc", "dd"} {
		f.send(d, true, rep(d[1:]+"/1", keys(100*len(d)+int(d[1]), 20)))
	}
	keepAlive := func() []string {
		f.send("da", false)
		return f.s.TakeResyncs()
	}
	steps := []struct {
		name string
		do   func()
		want []string // drivers asked
	}{
		{"within the backoff", func() { f.now = f.now.Add(999 * time.Millisecond) }, nil},
		{"backoff passed", func() { f.now = f.now.Add(time.Millisecond) }, []string{"db", "dc", "dd"}},
		{"asked once", func() { f.now = f.now.Add(time.Hour) }, nil},
		{"refused again: twice the backoff", func() {
			f.send("db", true, rep("b/1", keys(500, 20)))
			f.now = f.now.Add(time.Second)
		}, nil},
		{"second backoff passed", func() { f.now = f.now.Add(time.Second) }, []string{"db"}},
		{"no room", func() {
			f.send("dc", true, rep("c/1", keys(600, 20)))
			f.send("da", false, rep("a/1", keys(20, 10))) // 30 keys: no room
			f.now = f.now.Add(time.Minute)
		}, nil},
		{"a refused replica that left", func() {
			f.send("dd", true, rep("d/1", keys(700, 20)))
			f.s.Drop("d/1")
			f.now = f.now.Add(time.Minute)
		}, nil},
		{"room again", func() { f.send("da", false, rep("a/1", nil, keys(20, 10)...)) }, []string{"dc"}},
	}
	for _, st := range steps {
		st.do()
		if got := keepAlive(); !cmp.Equal(got, st.want) {
			t.Errorf("%s: asked %v; want %v", st.name, got, st.want)
		}
	}
}

// TestRefusedQueuesBounded: a replica refused again and again while its
// index stays full leaves the retry queues no longer than a few entries,
// also behind another refused replica that stays first in line.
func TestRefusedQueuesBounded(t *testing.T) {
	f := newPendingFixture(Options{})
	f.known["a/1"], f.known["b/1"], f.known["c/1"] = "m", "m", "m"
	f.ms.For("m").SetMaxKeys(32)
	f.send("da", true, rep("a/1", keys(0, 31))) // no room left
	f.send("db", true, rep("b/1", keys(100, 40)))
	for i := range 200 {
		f.send("dc", true, rep("c/1", keys(1000+i*50, 40)))
		f.now = f.now.Add(maxRefusedBackoff)
		f.send("da", false)
		if got := f.s.TakeResyncs(); len(got) != 0 {
			t.Fatalf("round %d: asked %v with no room", i, got)
		}
	}
	n := f.s.refusals.wait.Len()
	for _, q := range f.s.refusals.due {
		n += q.Len()
	}
	if limit := 2 * (2*len(f.s.refusals.byID) + 16); n > limit {
		t.Errorf("%d queued refusals for %d refused replicas; want at most %d", n, len(f.s.refusals.byID), limit)
	}
	for _, id := range []string{"b/1", "c/1"} {
		if why, ok := f.s.Refused(id); !ok || why == "" {
			t.Errorf("%s not refused", id)
		}
	}
}

// TestSnapshotAtTheKeyCap: a snapshot replaces a replica's state in the
// index, whose new keys land before the old ones leave. Near the key cap
// (a full cache churning, a resnapshot repair of an oversized replica)
// old and new together exceed it though the new state alone fits: that
// snapshot is taken, not refused, and no key counts as rejected. One too
// large on its own is refused, and only the keys that stayed out count
// (llmgw_index_rejected_total).
func TestSnapshotAtTheKeyCap(t *testing.T) {
	tests := []struct {
		name     string
		next     []uint64 // a/1's second snapshot
		refused  bool
		rejected uint64
	}{
		{"fits alone", keys(100, 8), false, 0},
		{"fits alone, sharing keys", append(keys(3, 3), keys(100, 5)...), false, 0},
		{"too large alone", keys(100, 11), true, 3}, // b/1's 2 and 8 of 11 fit
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newPendingFixture(Options{})
			f.known["a/1"], f.known["b/1"] = "m", "m"
			f.ms.For("m").SetMaxKeys(10)
			f.send("db", true, rep("b/1", keys(50, 2)))
			f.send("da", true, rep("a/1", keys(0, 6)))
			f.send("da", true, rep("a/1", tc.next))
			if _, refused := f.s.Refused("a/1"); refused != tc.refused || f.s.Synced("a/1") == tc.refused {
				t.Fatalf("a/1 refused %v, synced %v; want refused %v", refused, f.s.Synced("a/1"), tc.refused)
			}
			want := map[string]int{}
			if !tc.refused {
				want["a/1"] = len(tc.next)
			}
			if got := holders(f.ms, "m", tc.next...); !cmp.Equal(got, want) {
				t.Errorf("holders of the new state %v; want %v", got, want)
			}
			if got := holders(f.ms, "m", keys(0, 3)...); len(got) != 0 {
				t.Errorf("holders of the old state %v; want none", got)
			}
			if got := holders(f.ms, "m", keys(50, 2)...); !cmp.Equal(got, map[string]int{"b/1": 2}) {
				t.Errorf("b/1's keys held by %v; want b/1 unchanged", got)
			}
			if got := f.ms.For("m").Stats().Rejected; got != tc.rejected {
				t.Errorf("%d keys counted rejected; want %d", got, tc.rejected)
			}
		})
	}
}
