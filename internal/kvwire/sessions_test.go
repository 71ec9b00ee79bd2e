package kvwire

import (
	"testing"
	"time"
)

// TestSessionsAndExpired: Sessions lists each driver with when it was last
// heard from, a repeated update refreshes that time, and Expired counts
// the sessions Expire dropped.
func TestSessionsAndExpired(t *testing.T) {
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
