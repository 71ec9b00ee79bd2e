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
