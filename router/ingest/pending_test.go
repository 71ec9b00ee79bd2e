package ingest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

// pendingFixture is a Sink whose replica set is the known map and whose
// clock the test moves.
type pendingFixture struct {
	ms    *index.Models
	s     *Sink
	known map[string]string
	now   time.Time
	seq   map[string]uint64
}

func newPendingFixture(opts Options) *pendingFixture {
	f := &pendingFixture{ms: index.NewModels(index.Options{}), known: map[string]string{}, now: time.Unix(1000, 0), seq: map[string]uint64{}}
	opts.Now = func() time.Time { return f.now }
	f.s = NewSinkWith(f.ms, func(id string) (string, bool) { m, ok := f.known[id]; return m, ok }, opts)
	return f
}

// send applies one update from driver: a snapshot when snapshot is set,
// else the driver's next delta.
func (f *pendingFixture) send(driver string, snapshot bool, reps ...kvwire.Replica) {
	f.seq[driver]++
	f.s.ApplyUpdate(&kvwire.Update{Driver: driver, Epoch: 1, Seq: f.seq[driver], Snapshot: snapshot, Replicas: reps})
}

func rep(id string, add []uint64, del ...uint64) kvwire.Replica {
	return kvwire.Replica{ID: id, BlockSize: 16, Groups: []kvwire.Group{group(0, kvwire.TierGPU, add, del...)}}
}

// join lists id in the replica set and tells the Sink, as replicas.Set does.
func (f *pendingFixture) join(id string) []string {
	f.known[id] = "m"
	return f.s.Joined(Member{ID: id, Model: "m"})
}

// TestPendingAdoptedOnJoin: state that arrives before the replica set lists
// the replica is kept, follows the driver's deltas, and makes the replica
// exact the moment it joins, with no new word from the driver.
func TestPendingAdoptedOnJoin(t *testing.T) {
	f := newPendingFixture(Options{})
	f.send("d1", true, rep("a/1", []uint64{1, 2}))
	f.send("d1", false, rep("a/1", []uint64{3}, 1))
	f.send("d1", false, rep("b/1", []uint64{7})) // first mention in a followed session
	if f.s.Synced("a/1") || len(holders(f.ms, "m", 2, 3)) != 0 {
		t.Fatal("a replica not in the set is synced or indexed")
	}
	if st := f.s.Stats(); st.Pending != 2 || st.PendingKeys != 3 || st.Kept != 3 {
		t.Errorf("stats %+v; want 2 pending replicas with 3 keys, 3 kept entries", st)
	}
	if got := f.join("a/1"); len(got) != 0 {
		t.Errorf("Joined = %v; want no driver to ask for a snapshot", got)
	}
	if !f.s.Synced("a/1") || f.s.BlockSize("a/1") != 16 {
		t.Errorf("after join: synced %v, block size %d; want true, 16", f.s.Synced("a/1"), f.s.BlockSize("a/1"))
	}
	if d := cmp.Diff(map[string]int{"a/1": 2}, holders(f.ms, "m", 2, 3)); d != "" {
		t.Errorf("holders of 2,3 (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]int{}, holders(f.ms, "m", 1)); d != "" {
		t.Errorf("deleted key 1 still held (-want +got):\n%s", d)
	}
	if owner, ok := f.s.Owner("a/1"); !ok || owner != "d1" {
		t.Errorf("Owner(a/1) = %q, %v; want d1", owner, ok)
	}
	// Listed before Joined runs: the next update adopts, then applies.
	f.known["b/1"] = "m"
	f.send("d1", false, rep("b/1", []uint64{8}))
	if d := cmp.Diff(map[string]int{"b/1": 2}, holders(f.ms, "m", 7, 8)); d != "" {
		t.Errorf("b/1 adopted by its next update (-want +got):\n%s", d)
	}
	if st := f.s.Stats(); st.Adopted != 2 || st.Pending != 0 || st.PendingKeys != 0 {
		t.Errorf("stats %+v; want 2 adopted, nothing pending", st)
	}
}

// TestPendingBounds: kept state is bounded by age, replica count and keys;
// what is discarded is counted by reason, and its driver is asked for a
// snapshot when the replica joins, since its later deltas cannot rebuild it.
func TestPendingBounds(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		steps  func(f *pendingFixture)
		reason string
		lost   string // the replica whose state was discarded
		kept   string // one whose state was kept
	}{
		{
			name: "age",
			opts: Options{PendingAge: time.Minute},
			steps: func(f *pendingFixture) {
				f.send("d1", false, rep("a/1", []uint64{1}))
				f.now = f.now.Add(40 * time.Second)
				f.send("d2", false, rep("b/1", []uint64{2}))
				f.now = f.now.Add(40 * time.Second)
				f.send("d2", false) // a keep-alive checks the age bound
			},
			reason: DiscardAge, lost: "a/1", kept: "b/1",
		},
		{
			name: "replicas",
			opts: Options{PendingReplicas: 2},
			steps: func(f *pendingFixture) {
				for i, id := range []string{"a/1", "b/1", "c/1"} {
					f.now = f.now.Add(time.Second)
					f.send("d1", false, rep(id, []uint64{uint64(i + 1)}))
				}
			},
			reason: DiscardReplicas, lost: "a/1", kept: "c/1",
		},
		{
			name: "replicas of one age, by id",
			opts: Options{PendingReplicas: 2},
			steps: func(f *pendingFixture) {
				f.send("d1", false, rep("c/1", []uint64{1}), rep("a/1", []uint64{2}), rep("b/1", []uint64{3}))
			},
			reason: DiscardReplicas, lost: "a/1", kept: "c/1",
		},
		{
			name: "keys",
			opts: Options{PendingKeys: 3},
			steps: func(f *pendingFixture) {
				f.send("d1", false, rep("a/1", []uint64{1, 2}))
				f.now = f.now.Add(time.Second)
				f.send("d1", false, rep("b/1", []uint64{3, 4}))
			},
			reason: DiscardKeys, lost: "a/1", kept: "b/1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newPendingFixture(tc.opts)
			f.send("d1", true)
			f.send("d2", true)
			tc.steps(f)
			if got := f.s.Stats().Discarded; !cmp.Equal(got, map[string]uint64{tc.reason: 1}) {
				t.Errorf("discarded %v; want one for %s", got, tc.reason)
			}
			// Later deltas for the lost replica are not kept: they miss the
			// discarded blocks.
			f.send("d1", false, rep(tc.lost, []uint64{9}))
			if st := f.s.Stats(); st.Unknown != 1 {
				t.Errorf("unknown %d after a delta for a discarded replica; want 1", st.Unknown)
			}
			if got := f.join(tc.lost); !cmp.Equal(got, []string{"d1"}) {
				t.Errorf("Joined(%s) = %v; want [d1] asked for a snapshot", tc.lost, got)
			}
			if f.s.Synced(tc.lost) {
				t.Errorf("%s synced from discarded state", tc.lost)
			}
			if got := f.join(tc.kept); len(got) != 0 || !f.s.Synced(tc.kept) {
				t.Errorf("Joined(%s) = %v, synced %v; want adopted", tc.kept, got, f.s.Synced(tc.kept))
			}
		})
	}
}

// TestPendingFollowsSessions: a snapshot restates a driver's state (what
// it no longer lists is forgotten), a reset rebuilds a replica the Sink
// lost track of, another driver's claim replaces the first, and an expired
// driver's kept state goes with it.
func TestPendingFollowsSessions(t *testing.T) {
	f := newPendingFixture(Options{})
	f.send("d1", true, rep("a/1", []uint64{1}), rep("b/1", []uint64{2}))
	f.send("d1", true, rep("b/1", []uint64{2}))
	if st := f.s.Stats(); st.Pending != 1 {
		t.Errorf("after a snapshot without a/1: %d pending; want 1", st.Pending)
	}
	// A replica dropped from the set goes on in deltas that cannot be
	// kept, until a reset restates it.
	f.known["c/1"] = "m"
	f.send("d1", false, rep("c/1", []uint64{3}))
	f.s.Drop("c/1")
	delete(f.known, "c/1")
	f.send("d1", false, rep("c/1", []uint64{4}))
	reset := rep("c/1", []uint64{5})
	reset.Reset = true
	f.send("d1", false, reset)
	if got := f.join("c/1"); len(got) != 0 {
		t.Errorf("Joined(c/1) after a reset = %v; want adopted, no snapshot asked", got)
	}
	if d := cmp.Diff(map[string]int{"c/1": 1}, holders(f.ms, "m", 5)); d != "" {
		t.Errorf("c/1 after reset (-want +got):\n%s", d)
	}
	// b/1 moves to d2.
	f.send("d2", true, rep("b/1", []uint64{6}))
	f.join("b/1")
	if owner, _ := f.s.Owner("b/1"); owner != "d2" {
		t.Errorf("Owner(b/1) = %q; want d2", owner)
	}
	// Expiry: d2's kept state goes.
	f.send("d2", false, rep("e/1", []uint64{7}))
	f.s.ApplyUpdate(&kvwire.Update{Driver: "d2", Snapshot: true})
	if st := f.s.Stats(); st.Pending != 0 || st.PendingKeys != 0 {
		t.Errorf("after expiry: stats %+v; want nothing pending", st)
	}
	if got := f.join("e/1"); len(got) != 0 || f.s.Synced("e/1") {
		t.Errorf("Joined(e/1) after its driver expired = %v, synced %v; want nothing", got, f.s.Synced("e/1"))
	}
}
