package load

import (
	"testing"
	"time"
)

// TestPrefillDrains: queued prefill drains with time at the prior rate
// until a rate is measured, then at the measured one; it never exceeds the
// unanswered requests' tokens, never goes below zero, and peers hear the
// drained figure.
func TestPrefillDrains(t *testing.T) {
	t.Parallel()
	type step struct {
		wait    time.Duration
		send    int // uncached tokens of a new request to "a" (0: none)
		answer  int // answer the n-th request sent (1-based; 0: none)
		want    int // PrefillTokens of "a" after the step
		wantOwn int // what Own reports of "a"
	}
	cases := []struct {
		name  string
		opts  []Option
		steps []step
	}{
		{"prior rate", nil, []step{
			{send: 3000, want: 3000, wantOwn: 3000},
			{wait: time.Second, want: 2000, wantOwn: 2000},
			{wait: 5 * time.Second, want: 0},
			// Drained to nothing does not bank credit for the next.
			{send: 500, want: 500, wantOwn: 500},
		}},
		{"bounded by the unanswered", nil, []step{
			{send: 3000, want: 3000, wantOwn: 3000},
			{send: 60, want: 3060, wantOwn: 3060},
			{wait: 500 * time.Millisecond, want: 2560, wantOwn: 2560},
			{answer: 1, want: 60, wantOwn: 60},
		}},
		{"measured rate", nil, []step{
			// Sent to an idle replica and answered 1 s later: 2,000/s.
			{send: 2000, want: 2000, wantOwn: 2000},
			{wait: time.Second, answer: 1, want: 0},
			{send: 3000, want: 3000, wantOwn: 3000},
			{wait: 500 * time.Millisecond, want: 2000, wantOwn: 2000},
		}},
		{"short prompts measure nothing", nil, []step{
			{send: 100, want: 100, wantOwn: 100},
			{wait: 10 * time.Second, answer: 1, want: 0},
			{send: 3000, want: 3000, wantOwn: 3000},
			{wait: time.Second, want: 2000, wantOwn: 2000}, // still the prior
		}},
		{"draining off", []Option{WithPrefillRate(0)}, []step{
			{send: 3000, want: 3000, wantOwn: 3000},
			{wait: time.Minute, want: 3000, wantOwn: 3000},
			// An answer that would measure 2,000/s measures nothing.
			{send: 2000, want: 5000, wantOwn: 5000},
			{wait: time.Second, answer: 1, want: 2000, wantOwn: 2000},
			{wait: time.Second, want: 2000, wantOwn: 2000},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newStopped()
			tr := NewTracker(append([]Option{WithClock(clock.now)}, tc.opts...)...)
			var answers []func()
			for i, s := range tc.steps {
				clock.wait(s.wait)
				if s.send > 0 {
					answered, end := tr.BeginPrefill("a", s.send+100, s.send)
					defer end()
					answers = append(answers, answered)
				}
				if s.answer > 0 {
					answers[s.answer-1]()
				}
				if got := tr.Load("a").PrefillTokens; got != s.want {
					t.Errorf("step %d: PrefillTokens %d; want %d", i, got, s.want)
				}
				if got := tr.Own()["a"].PrefillTokens; got != s.wantOwn {
					t.Errorf("step %d: Own reports PrefillTokens %d; want %d", i, got, s.wantOwn)
				}
			}
		})
	}
}

// TestMeasuredRateIsShared: a replica with no measurement of its own
// drains at the rate measured on the others, and one sent work while
// another router's prefill was queued there measures nothing.
func TestMeasuredRateIsShared(t *testing.T) {
	t.Parallel()
	clock := newStopped()
	tr := NewTracker(WithClock(clock.now))
	answered, end := tr.BeginPrefill("a", 4000, 4000)
	defer end()
	clock.wait(time.Second)
	answered() // 4,000 tokens a second on a

	tr.SetPeerLoads(map[string]Peer{"c": {PrefillTokens: 10}})
	answeredC, endC := tr.BeginPrefill("c", 1000, 1000) // behind a peer's
	defer endC()
	_, endB := tr.BeginPrefill("b", 3000, 3000)
	defer endB()
	clock.wait(500 * time.Millisecond)
	answeredC() // not a measurement: the peer's prefill was ahead of it
	if got, want := tr.Load("b").PrefillTokens, 1000; got != want {
		t.Errorf("b drained to %d; want %d (a's 4,000/s)", got, want)
	}
	_, endB2 := tr.BeginPrefill("b", 3000, 3000)
	defer endB2()
	clock.wait(250 * time.Millisecond)
	if got, want := tr.Load("b").PrefillTokens, 3000; got != want {
		t.Errorf("b drained to %d; want %d (1,000 + 3,000 less 250 ms at 4,000/s)", got, want)
	}
}

// TestPeersShareTheDrain: two routers with prefill queued on one replica
// each drain their part at their share of its rate, so that the queue
// each reads (its own plus what the other reports) falls at the
// replica's rate, not at twice it.
func TestPeersShareTheDrain(t *testing.T) {
	t.Parallel()
	clock := newStopped()
	a := NewTracker(WithClock(clock.now)) // the prior, 1,000 tokens a second
	b := NewTracker(WithClock(clock.now))
	exchange := func() {
		ownA, ownB := a.Own(), b.Own()
		a.SetPeerLoads(ownB)
		b.SetPeerLoads(ownA)
	}
	_, endA := a.BeginPrefill("r", 3000, 3000)
	defer endA()
	_, endB := b.BeginPrefill("r", 1000, 1000)
	defer endB()
	exchange()
	steps := []struct {
		wait        time.Duration
		ownA, ownB  int // each router's own part after the wait
		total       int // the queue both read after exchanging
		description string
	}{
		{0, 3000, 1000, 4000, "as sent"},
		// Shares 3/4 and 1/4 of 1,000 tokens a second.
		{time.Second, 2250, 750, 3000, "one second at the replica's rate"},
		{2 * time.Second, 750, 250, 1000, "three seconds"},
		{2 * time.Second, 0, 0, 0, "drained"},
	}
	for _, s := range steps {
		clock.wait(s.wait)
		ownA, ownB := a.Own()["r"].PrefillTokens, b.Own()["r"].PrefillTokens
		exchange()
		totA, totB := a.Load("r").PrefillTokens, b.Load("r").PrefillTokens
		if ownA != s.ownA || ownB != s.ownB || totA != s.total || totB != s.total {
			t.Errorf("%s: own parts %d and %d, queues read %d and %d; want %d, %d and %d both",
				s.description, ownA, ownB, totA, totB, s.ownA, s.ownB, s.total)
		}
	}
}

// TestPrefillRate: the rate a replica is sized by is the prior until one is
// measured, the fleet's mean for a replica not measured yet, and the
// replica's own once measured; 0 with draining off.
func TestPrefillRate(t *testing.T) {
	c := newStopped()
	tr := NewTracker(WithClock(c.now), WithPrefillRate(500))
	if got := tr.PrefillRate("a"); got != 500 {
		t.Fatalf("before any answer: %v; want the prior 500", got)
	}
	answered, end := tr.BeginPrefill("a", 4000, 4000)
	c.wait(2 * time.Second)
	answered()
	end()
	for _, tt := range []struct {
		replica string
		want    float64
	}{{"a", 2000}, {"b", 2000}} {
		if got := tr.PrefillRate(tt.replica); got != tt.want {
			t.Errorf("PrefillRate(%s) = %v; want %v", tt.replica, got, tt.want)
		}
	}
	if got := NewTracker(WithPrefillRate(0)).PrefillRate("a"); got != 0 {
		t.Errorf("draining off: %v; want 0", got)
	}
}
