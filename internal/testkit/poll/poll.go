// Package poll lets tests wait for a condition instead of sleeping: it
// checks the condition every Interval until it holds or a deadline passes.
// A sleep either wastes time or loses the race on a loaded machine; a poll
// with a generous deadline does neither.
//
// It imports only the standard library; any package's tests may use it.
package poll

import (
	"testing"
	"time"
)

// Interval is how often a condition is checked.
const Interval = 10 * time.Millisecond

// Timeout is how long Until waits. It is far above what any wait takes on
// a busy shared machine, so only a real failure reaches it.
const Timeout = 30 * time.Second

// Within reports whether cond held within d. It calls cond on the caller's
// goroutine, at least once.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(Interval)
	}
	return true
}

// Until fails the test unless cond holds within Timeout; what says what
// was awaited ("the engine to serve").
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Within(Timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", Timeout, what)
	}
}
