package kvwire

import (
	"testing"
	"time"
)

// TestSessions: a session appears with a driver's snapshot, follows its
// sequence, and is gone once forgotten.
func TestSessions(t *testing.T) {
	t.Parallel()
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

// TestSessionsAndExpired: Sessions lists each driver with when it was last
// heard from, a repeated update refreshes that time, and Expired counts
// the sessions Expire dropped.
func TestSessionsAndExpired(t *testing.T) {
	t.Parallel()
	r, err := NewReceiver("secret", NewMirror())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Sessions(); len(got) != 0 {
		t.Fatalf("sessions before any update: %v", got)
	}
	before := time.Now()
	if err := r.Receive("Bearer secret", mustEncode(t, update(0, true, rep("a", 1)))); err != nil {
		t.Fatal(err)
	}
	got := r.Sessions()
	if len(got) != 1 || got[0].Driver != "node-1" || got[0].LastSeen.Before(before) {
		t.Fatalf("sessions %+v; want node-1 last seen after %v", got, before)
	}
	first := got[0].LastSeen
	if err := r.Receive("Bearer secret", mustEncode(t, update(0, true, rep("a", 1)))); err != nil {
		t.Fatal(err)
	}
	if again := r.Sessions()[0].LastSeen; again.Before(first) {
		t.Errorf("a repeated snapshot moved last seen back: %v before %v", again, first)
	}
	if n := r.Expired(); n != 0 {
		t.Errorf("expired %d before any expiry", n)
	}
	r.Expire(time.Now().Add(time.Second))
	if n := r.Expired(); n != 1 {
		t.Errorf("expired %d after one driver went silent; want 1", n)
	}
	if got := r.Sessions(); len(got) != 0 {
		t.Errorf("sessions after expiry: %v", got)
	}
}
