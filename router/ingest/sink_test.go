package ingest

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

func group(rank int, tier kvwire.Tier, add []uint64, del ...uint64) kvwire.Group {
	return kvwire.Group{Rank: rank, Tier: tier, Add: add, Del: del}
}

// holders returns, per replica, how many leading keys of keys it holds.
func holders(ms *index.Models, model string, keys ...uint64) map[string]int {
	out := map[string]int{}
	for _, m := range ms.Lookup(model, keys, nil) {
		out[m.Replica] = m.Blocks
	}
	return out
}

func TestSinkApply(t *testing.T) {
	known := map[string]string{"a/1": "m", "b/1": "m"}
	ms := index.NewModels(index.Options{})
	s := NewSink(ms, func(id string) (string, bool) { m, ok := known[id]; return m, ok }, nil)
	steps := []struct {
		name   string
		u      kvwire.Update
		want   map[string]int // holders of keys 1,2,3
		synced []bool         // a/1, b/1
	}{
		{
			name: "snapshot",
			u: kvwire.Update{Driver: "d1", Epoch: 7, Snapshot: true, Replicas: []kvwire.Replica{
				{ID: "a/1", BlockSize: 16, Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{1, 2})}},
				{ID: "b/1", Groups: []kvwire.Group{group(0, kvwire.TierCPU, []uint64{1})}},
			}},
			want:   map[string]int{"a/1": 2, "b/1": 1},
			synced: []bool{true, true},
		},
		{
			name: "delta adds and deletes",
			u: kvwire.Update{Driver: "d1", Epoch: 7, Seq: 1, Replicas: []kvwire.Replica{
				{ID: "a/1", Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{3}, 2)}},
			}},
			want:   map[string]int{"a/1": 1, "b/1": 1},
			synced: []bool{true, true},
		},
		{
			name: "reset",
			u: kvwire.Update{Driver: "d1", Epoch: 7, Seq: 2, Replicas: []kvwire.Replica{
				{ID: "b/1", Reset: true, Groups: []kvwire.Group{group(1, kvwire.TierGPU, []uint64{1, 2, 3})}},
			}},
			want:   map[string]int{"a/1": 1, "b/1": 3},
			synced: []bool{true, true},
		},
		{
			name: "snapshot without a replica drops it",
			u: kvwire.Update{Driver: "d1", Epoch: 8, Snapshot: true, Replicas: []kvwire.Replica{
				{ID: "b/1", Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{1})}},
			}},
			want:   map[string]int{"b/1": 1},
			synced: []bool{false, true},
		},
		{
			name:   "expiry empties the driver",
			u:      kvwire.Update{Driver: "d1", Snapshot: true},
			want:   map[string]int{},
			synced: []bool{false, false},
		},
	}
	for _, st := range steps {
		s.ApplyUpdate(&st.u)
		if d := cmp.Diff(st.want, holders(ms, "m", 1, 2, 3)); d != "" {
			t.Errorf("%s: holders (-want +got):\n%s", st.name, d)
		}
		got := []bool{s.Synced("a/1"), s.Synced("b/1")}
		if d := cmp.Diff(st.synced, got); d != "" {
			t.Errorf("%s: synced (-want +got):\n%s", st.name, d)
		}
	}
	if st := s.Stats(); st.Updates != 5 || st.Snapshots != 3 || st.Errors != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestSinkDropAndRejoin(t *testing.T) {
	known := map[string]string{"a/1": "m"}
	ms := index.NewModels(index.Options{})
	s := NewSink(ms, func(id string) (string, bool) { m, ok := known[id]; return m, ok }, nil)
	s.ApplyUpdate(&kvwire.Update{Driver: "d1", Epoch: 1, Snapshot: true, Replicas: []kvwire.Replica{
		{ID: "a/1", Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{1})}},
	}})
	if d := cmp.Diff(map[string]int{"a/1": 1}, holders(ms, "m", 1)); d != "" {
		t.Errorf("after snapshot (-want +got):\n%s", d)
	}
	s.Drop("a/1")
	delete(known, "a/1")
	if got := holders(ms, "m", 1); len(got) != 0 || s.Synced("a/1") {
		t.Errorf("after Drop: holders %v, synced %v", got, s.Synced("a/1"))
	}
	// Its driver goes on with deltas from state the Sink no longer has:
	// they cannot be kept.
	s.ApplyUpdate(&kvwire.Update{Driver: "d1", Epoch: 1, Seq: 1, Replicas: []kvwire.Replica{
		{ID: "a/1", Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{2})}},
	}})
	if st := s.Stats(); st.Unknown != 1 || st.Pending != 0 {
		t.Errorf("delta after Drop: stats %+v; want 1 unknown, nothing pending", st)
	}
	// Back again (a flapping check): its driver must resend a snapshot.
	known["a/1"] = "m"
	if got := s.Joined(Member{ID: "a/1", Model: "m"}); !cmp.Equal(got, []string{"d1"}) {
		t.Errorf("Joined after Drop = %v; want [d1]", got)
	}
	if got := s.Joined(Member{ID: "a/1", Model: "m"}); len(got) != 0 {
		t.Errorf("second Joined = %v; want none", got)
	}
}

func TestSinkBadTier(t *testing.T) {
	ms := index.NewModels(index.Options{})
	s := NewSink(ms, func(string) (string, bool) { return "m", true }, nil)
	s.ApplyUpdate(&kvwire.Update{Driver: "d", Epoch: 1, Snapshot: true, Replicas: []kvwire.Replica{
		{ID: "a/1", Groups: []kvwire.Group{group(0, kvwire.Tier(9), []uint64{1})}},
	}})
	if s.Stats().Errors != 1 {
		t.Errorf("stats %+v; want one error", s.Stats())
	}
}

// TestThroughReceiver drives the Sink through a real kvwire.Receiver over
// HTTP: a gap asks for a snapshot; the snapshot restores the index.
func TestThroughReceiver(t *testing.T) {
	ms := index.NewModels(index.Options{})
	s := NewSink(ms, func(string) (string, bool) { return "m", true }, nil)
	rcv, err := kvwire.NewReceiver("tok", s)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	post := func(u *kvwire.Update) int {
		t.Helper()
		u.Version = kvwire.Version
		b, err := kvwire.Encode(u)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+kvwire.Path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	rep := []kvwire.Replica{{ID: "a/1", Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{5, 6})}}}
	if c := post(&kvwire.Update{Driver: "d", Epoch: 3, Seq: 4, Replicas: rep}); c != http.StatusConflict {
		t.Errorf("delta without session: %d; want 409", c)
	}
	if c := post(&kvwire.Update{Driver: "d", Epoch: 3, Seq: 4, Snapshot: true, Replicas: rep}); c != http.StatusNoContent {
		t.Errorf("snapshot: %d; want 204", c)
	}
	if d := cmp.Diff(map[string]int{"a/1": 2}, holders(ms, "m", 5, 6)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// FuzzApply feeds decoded wire updates to the Sink: whatever a driver sends
// that the decoder accepts, applying it must not panic, and a replica the
// Sink calls synced must be one the update named.
func FuzzApply(f *testing.F) {
	seed, _ := kvwire.Encode(&kvwire.Update{Version: kvwire.Version, Driver: "d", Epoch: 1, Snapshot: true,
		Replicas: []kvwire.Replica{{ID: "a/1", Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: []uint64{1, 2}}}}}})
	f.Add(seed)
	f.Fuzz(func(t *testing.T, body []byte) {
		u, err := kvwire.Decode(body)
		if err != nil {
			return
		}
		ms := index.NewModels(index.Options{MaxKeys: 1000})
		joined := map[string]bool{}
		// Replicas with an odd-length id are listed from the start, the
		// others only once joined: their state is kept until then.
		s := NewSinkWith(ms, func(id string) (string, bool) { return "m", len(id)%2 == 1 || joined[id] }, Options{PendingKeys: 64, PendingReplicas: 4})
		s.ApplyUpdate(u)
		s.ApplyUpdate(u)
		named := map[string]bool{}
		for _, r := range u.Replicas {
			named[r.ID] = true
		}
		keys := 0
		for _, p := range s.kept.byID {
			keys += p.keys
		}
		if st := s.Stats(); st.PendingKeys != keys || st.PendingKeys > 64 || st.Pending > 4 {
			t.Fatalf("pending keys %d (counted %d), %d replicas; bounds 64 keys, 4 replicas", st.PendingKeys, keys, st.Pending)
		}
		for id := range named {
			joined[id] = true
			s.Joined(Member{ID: id, Model: "m"})
		}
		if st := s.Stats(); st.Pending != 0 || st.PendingKeys != 0 {
			t.Fatalf("kept state left after every replica joined: %+v", st)
		}
		for id := range s.sessions.owner {
			if !named[id] {
				t.Fatalf("replica %q synced but not in the update", id)
			}
		}
		checkBookkeeping(t, s)
	})
}

// checkBookkeeping fails t unless the Sink's derived structures agree with
// its maps: the published state with owner and refused, the age heap with
// pending.
func checkBookkeeping(t *testing.T, s *Sink) {
	t.Helper()
	v := s.published.cur.Load()
	var states stateMap
	if v != nil {
		states = v.states
	}
	if states.Len() != len(s.sessions.owner) {
		t.Fatalf("%d replicas published; %d owned", states.Len(), len(s.sessions.owner))
	}
	for id := range s.sessions.owner {
		want := published{blockSize: s.sessions.blockSz[id]}
		if rf := s.refusals.byID[id]; rf != nil {
			want.refused, want.reason = true, rf.reason
		}
		if got, ok := states.Get(id); !ok || got != want {
			t.Fatalf("%s published as %+v, %v; want %+v", id, got, ok, want)
		}
	}
	if len(s.kept.byAge) != len(s.kept.byID) {
		t.Fatalf("%d states by age; %d pending", len(s.kept.byAge), len(s.kept.byID))
	}
	for i, p := range s.kept.byAge {
		if p.at != i || s.kept.byID[p.id] != p {
			t.Fatalf("state by age %d (%s) is at %d, pending %v", i, p.id, p.at, s.kept.byID[p.id] == p)
		}
		if i > 0 && s.kept.byAge.Less(i, (i-1)/2) {
			t.Fatalf("state by age %d is older than its parent", i)
		}
	}
}
