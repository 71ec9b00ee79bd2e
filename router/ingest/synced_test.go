package ingest

import (
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/index"
)

// TestSyncedDoesNotWaitForUpdates: the replica set asks Synced for every
// candidate of every request, so it must answer while an update (which can
// be a snapshot of a million keys) is being applied, with the state as of
// the last finished update.
func TestSyncedDoesNotWaitForUpdates(t *testing.T) {
	inApply, release := make(chan struct{}), make(chan struct{})
	blocking := false
	s := NewSink(index.NewModels(index.Options{}), func(id string) (string, bool) {
		if blocking && id == "b/1" {
			close(inApply)
			<-release // the update stalls here, holding the sink's lock
		}
		return "m", true
	}, nil)
	snapshot := func(ids ...string) *kvwire.Update {
		u := &kvwire.Update{Driver: "d1", Epoch: 1, Snapshot: true}
		for _, id := range ids {
			u.Replicas = append(u.Replicas, kvwire.Replica{ID: id, Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{1})}})
		}
		return u
	}
	s.ApplyUpdate(snapshot("a/1"))
	blocking = true
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		s.ApplyUpdate(snapshot("a/1", "b/1"))
	}()
	<-inApply
	answered := make(chan [2]bool, 1)
	go func() { answered <- [2]bool{s.Synced("a/1"), s.Synced("b/1")} }()
	select {
	case got := <-answered:
		if got != [2]bool{true, false} {
			t.Errorf("during the update: Synced(a/1), Synced(b/1) = %v; want the last finished state [true false]", got)
		}
	case <-time.After(poll.Timeout):
		t.Error("Synced waited for the update being applied")
	}
	close(release)
	<-applied
	if !s.Synced("b/1") {
		t.Error("b/1 not synced after its update finished")
	}
	s.Drop("a/1")
	if s.Synced("a/1") {
		t.Error("a/1 still synced after Drop")
	}
}

// TestSyncedPublishesChangesOnly: a new synced set (a new generation) is
// published when a replica's mode or refusal reason changes and not for
// updates that change neither, so the replica set keeps its candidates'
// modes through a busy fleet's deltas; a reader's published set never
// changes under it.
func TestSyncedPublishesChangesOnly(t *testing.T) {
	s := NewSink(index.NewModels(index.Options{MaxKeys: 4}), func(id string) (string, bool) { return "m", id != "new/1" }, nil)
	replica := func(id string, add []uint64, del ...uint64) kvwire.Replica {
		return kvwire.Replica{ID: id, Groups: []kvwire.Group{group(0, kvwire.TierGPU, add, del...)}}
	}
	type state struct {
		synced  bool
		refused string
	}
	steps := []struct {
		name    string
		do      func()
		changed bool
		want    map[string]state
	}{
		{"snapshot", func() {
			s.ApplyUpdate(&kvwire.Update{Driver: "d1", Epoch: 1, Snapshot: true,
				Replicas: []kvwire.Replica{replica("a/1", []uint64{1}), replica("b/1", []uint64{2})}})
		}, true, map[string]state{"a/1": {synced: true}, "b/1": {synced: true}}},
		{"deltas", func() {
			s.ApplyUpdate(&kvwire.Update{Driver: "d1", Epoch: 1, Seq: 1,
				Replicas: []kvwire.Replica{replica("a/1", []uint64{3}, 1), replica("b/1", nil, 2)}})
		}, false, map[string]state{"a/1": {synced: true}, "b/1": {synced: true}}},
		{"state for a replica not listed yet", func() {
			s.ApplyUpdate(&kvwire.Update{Driver: "d1", Epoch: 1, Seq: 2, Replicas: []kvwire.Replica{replica("new/1", []uint64{9})}})
		}, false, map[string]state{"new/1": {}}},
		{"reset past the key cap", func() {
			s.ApplyUpdate(&kvwire.Update{Driver: "d1", Epoch: 1, Seq: 3,
				Replicas: []kvwire.Replica{{ID: "b/1", Reset: true, Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{10, 11, 12, 13, 14})}}}})
		}, true, map[string]state{"a/1": {synced: true}, "b/1": {refused: "reset"}}},
		{"delta of the refused replica", func() {
			s.ApplyUpdate(&kvwire.Update{Driver: "d1", Epoch: 1, Seq: 4, Replicas: []kvwire.Replica{replica("b/1", []uint64{15})}})
		}, false, map[string]state{"b/1": {refused: "reset"}}},
		{"refused replica's snapshot fits", func() {
			s.ApplyUpdate(&kvwire.Update{Driver: "d1", Epoch: 1, Seq: 5,
				Replicas: []kvwire.Replica{{ID: "b/1", Reset: true, Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{2})}}}})
		}, true, map[string]state{"a/1": {synced: true}, "b/1": {synced: true}}},
		{"drop", func() { s.Drop("a/1") }, true, map[string]state{"a/1": {}, "b/1": {synced: true}}},
		{"drop of a replica without state", func() { s.Drop("c/1") }, false, map[string]state{"c/1": {}}},
		{"driver gone", func() { s.ApplyUpdate(&kvwire.Update{Driver: "d1", Epoch: 1, Snapshot: true}) }, true, map[string]state{"b/1": {}}},
	}
	gen := s.SyncedGeneration()
	for _, st := range steps {
		held := s.published.cur.Load()
		var before map[string]state
		if held != nil {
			before = map[string]state{}
			for id := range st.want {
				p, ok := held.states.Get(id)
				before[id] = state{synced: ok && !p.refused, refused: p.reason}
			}
		}
		st.do()
		if got := s.SyncedGeneration(); (got != gen) != st.changed {
			t.Errorf("%s: generation %d -> %d; want a change: %v", st.name, gen, got, st.changed)
		}
		gen = s.SyncedGeneration()
		for id, w := range st.want {
			why, refused := s.Refused(id)
			got := state{synced: s.Synced(id), refused: why}
			if w.refused != "" {
				if !refused || why == "" {
					t.Errorf("%s: %s not refused; want refused", st.name, id)
				}
				got.refused = "reset" // the index's wording is its own
			}
			if got != w {
				t.Errorf("%s: %s is %+v; want %+v", st.name, id, got, w)
			}
		}
		for id, b := range before {
			p, ok := held.states.Get(id)
			if now := (state{synced: ok && !p.refused, refused: p.reason}); now != b {
				t.Errorf("%s: the set published before changed for %s: %+v, was %+v", st.name, id, now, b)
			}
		}
	}
}
