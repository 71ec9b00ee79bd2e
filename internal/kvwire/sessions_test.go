package kvwire

import (
	"testing"
	"time"
)

// TestSessions: a session appears with a driver's snapshot, follows its
// sequence, and is gone once forgotten.
func TestSessions(t *testing.T) {
	r, err := NewReceiver("secret", NewMirror())
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Sessions(); len(s) != 0 {
		t.Fatalf("before any update: %v", s)
	}
	before := time.Now()
	for _, u := range []*Update{update(0, true, rep("a", 1)), update(1, false, rep("a", 2))} {
		if err := r.Receive("Bearer secret", mustEncode(t, u)); err != nil {
			t.Fatal(err)
		}
	}
	s := r.Sessions()
	if len(s) != 1 || s[0].Driver != "node-1" || s[0].Seq != 1 || s[0].LastSeen.Before(before) {
		t.Fatalf("sessions %+v; want node-1 at seq 1, seen now", s)
	}
	r.Forget("node-1")
	if s := r.Sessions(); len(s) != 0 {
		t.Errorf("after Forget: %v", s)
	}
}
