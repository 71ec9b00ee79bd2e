package replicas

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/scheduler"
)

type fixture struct {
	set    *Set
	sink   *ingest.Sink
	models *index.Models
	now    time.Time
	resnap forgotten
}

// forgotten records the drivers the set asks for a snapshot (Drivers).
type forgotten []string

func (f *forgotten) Forget(driver string) { *f = append(*f, driver) }

func newFixture() *fixture {
	f := &fixture{models: index.NewModels(index.Options{}), now: time.Unix(1000, 0)}
	f.sink = ingest.New(f.models, ingest.Options{})
	f.set = New(f.sink, load.NewTracker(), Options{
		Now:     func() time.Time { return f.now },
		Drivers: &f.resnap,
	})
	return f
}

func (f *fixture) snapshot(driver string, epoch uint64, ids ...string) {
	u := &kvwire.Update{Driver: driver, Epoch: epoch, Snapshot: true}
	for _, id := range ids {
		u.Replicas = append(u.Replicas, kvwire.Replica{ID: id, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: []uint64{42}}}})
	}
	f.sink.ApplyUpdate(u)
}

func TestReplaceAndCandidates(t *testing.T) {
	f := newFixture()
	f.set.Replace([]Replica{
		{ID: "b/1", Model: "m", Address: "h:2"},
		{ID: "a/1", Model: "m", Address: "h:1"},
		{ID: "c/1", Model: "other", Address: "h:3"},
		{ID: "a/1", Model: "dup", Address: "h:9"},
	})
	if got := f.set.Models(); !cmp.Equal(got, []string{"m", "other"}) {
		t.Errorf("Models = %v", got)
	}
	f.snapshot("d", 1, "a/1")
	cands := f.set.Candidates("m")
	var ids []string
	var modes []scheduler.Mode
	for _, c := range cands {
		ids = append(ids, c.ID)
		modes = append(modes, c.Mode)
	}
	if d := cmp.Diff([]string{"a/1", "b/1"}, ids); d != "" {
		t.Errorf("ids (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]scheduler.Mode{scheduler.ModeExact, scheduler.ModeApprox}, modes); d != "" {
		t.Errorf("modes (-want +got):\n%s", d)
	}
	// a/1 leaves: out of the index and no longer exact, at once.
	f.set.Replace([]Replica{{ID: "b/1", Model: "m", Address: "h:2"}})
	if m := f.models.Lookup("m", []uint64{42}, nil); len(m) != 0 {
		t.Errorf("index still holds %v after the replica left", m)
	}
	if f.set.Mode("a/1") != scheduler.ModeApprox {
		t.Errorf("departed replica still exact")
	}
}

// TestEarlyKVState: state that arrived before the replica is adopted when
// it joins (exact at once, no snapshot asked); a replica that left and came
// back, whose driver's deltas were not followed meanwhile, asks its driver
// for a snapshot.
func TestEarlyKVState(t *testing.T) {
	f := newFixture()
	f.snapshot("d7", 1, "x/1") // before the replica is known
	f.set.Replace([]Replica{{ID: "x/1", Model: "m", Address: "h:1"}})
	if len(f.resnap) != 0 || f.set.Mode("x/1") != scheduler.ModeExact {
		t.Errorf("after joining: resnapshot %v, mode %s; want none, exact", f.resnap, f.set.Mode("x/1"))
	}
	if m := f.models.Lookup("m", []uint64{42}, nil); len(m) != 1 || m[0].Replica != "x/1" {
		t.Errorf("lookup %v; want x/1 holding the early block", m)
	}
	f.set.Replace(nil)
	f.set.Replace([]Replica{{ID: "x/1", Model: "m", Address: "h:1"}})
	if d := cmp.Diff(forgotten{"d7"}, f.resnap); d != "" {
		t.Errorf("resnapshot after rejoining (-want +got):\n%s", d)
	}
}

func TestBreaker(t *testing.T) {
	f := newFixture()
	f.set.Replace([]Replica{{ID: "a/1", Model: "m", Address: "h:1"}})
	steps := []struct {
		do      func()
		healthy bool
	}{
		{func() { f.set.Failed("a/1") }, true},
		{func() { f.set.Failed("a/1") }, true},
		{func() { f.set.Failed("a/1") }, false},
		{func() { f.now = f.now.Add(10 * time.Second) }, true},
		{func() { f.set.Failed("a/1") }, false}, // half-open: one failure re-opens
		{func() { f.now = f.now.Add(10 * time.Second); f.set.Succeeded("a/1") }, true},
		{func() { f.set.Failed("a/1") }, true},
	}
	for i, st := range steps {
		st.do()
		if got := f.set.Candidates("m")[0].Healthy; got != st.healthy {
			t.Errorf("step %d: healthy %v; want %v", i, got, st.healthy)
		}
	}
}
