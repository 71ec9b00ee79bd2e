package load

import (
	"testing"
	"time"
)

// stopped is a clock that moves only when a test moves it.
type stopped struct{ t time.Time }

func (c *stopped) now() time.Time       { return c.t }
func (c *stopped) wait(d time.Duration) { c.t = c.t.Add(d) }
func newStopped() *stopped              { return &stopped{t: time.Unix(1e9, 0)} }

// TestRead: a view reads each replica's load, its own and its peers',
// and zero for a replica the tracker does not know.
func TestRead(t *testing.T) {
	tr := NewTracker()
	end := tr.Begin("a", 100)
	defer end()
	tr.SetScraped("b", 2, 3, 0.5)
	ids := []string{"a", "b", "c"}
	want := []Load{{InFlight: 1, InFlightTokens: 100}, {Waiting: 2, Running: 3, KVUsage: 0.5}, {}}
	got := make([]Load, len(ids))
	got[2] = Load{InFlight: 9} // stale: c is unknown to the tracker
	read := func() {
		tr.Read(func(l Locked) {
			for i, id := range ids {
				got[i] = l.Load(id)
			}
		})
	}
	read()
	for i, id := range ids {
		if got[i] != want[i] {
			t.Errorf("%s: load %+v; want %+v", id, got[i], want[i])
		}
	}
	tr.SetPeerLoads(map[string]Peer{"b": {InFlight: 2}, "c": {InFlight: 1, PrefillTokens: 7}})
	read()
	want[1].InFlight, want[2] = 2, Load{InFlight: 1, PrefillTokens: 7}
	for i, id := range ids {
		if got[i] != want[i] || got[i] != tr.Load(id) {
			t.Errorf("with peers, %s: load %+v (Tracker.Load %+v); want %+v", id, got[i], tr.Load(id), want[i])
		}
	}
	if n := testing.AllocsPerRun(50, read); n != 0 {
		t.Errorf("Read allocates %v times per call; want 0", n)
	}
}

// TestTrackerPrefill: uncached prompt tokens count until the replica
// answers or the request ends, whichever comes first, once (on a clock
// that stands still, so nothing drains).
func TestTrackerPrefill(t *testing.T) {
	t.Parallel()
	tr := NewTracker(WithClock(newStopped().now))
	answered, end := tr.BeginPrefill("a", 1000, 600)
	_, end2 := tr.BeginPrefill("a", 500, 500)
	if got, want := tr.Load("a"), (Load{InFlight: 2, InFlightTokens: 1500, PrefillTokens: 1100}); got != want {
		t.Fatalf("load %+v; want %+v", got, want)
	}
	answered()
	answered()
	if got, want := tr.Load("a"), (Load{InFlight: 2, InFlightTokens: 1500, PrefillTokens: 500}); got != want {
		t.Fatalf("after an answer: load %+v; want %+v", got, want)
	}
	end2() // never answered: its prefill goes with it
	end()
	end()
	answered() // after the end: nothing
	if got := tr.Load("a"); got != (Load{}) {
		t.Errorf("after both ended: load %+v; want zero", got)
	}
	_, end = tr.BeginPrefill("b", 10, -5) // more cached than prompt
	if got := tr.Load("b").PrefillTokens; got != 0 {
		t.Errorf("negative uncached tokens counted as %d; want 0", got)
	}
	end()
}
