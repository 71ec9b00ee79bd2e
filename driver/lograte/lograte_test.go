package lograte

import (
	"slices"
	"testing"
	"time"
)

// TestLimiter: within an interval only the first call runs; the next one
// after it reports how many were suppressed meanwhile.
func TestLimiter(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		every time.Duration
		at    []time.Duration // each call's time after start
		want  []int           // the suppressed counts of the calls that ran
	}{
		{"first call runs", time.Second, []time.Duration{0}, []int{0}},
		{"calls within the interval are suppressed", time.Second, []time.Duration{0, 100 * time.Millisecond, 900 * time.Millisecond}, []int{0}},
		{"the next after the interval reports them", time.Second,
			[]time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, time.Second, 1500 * time.Millisecond, 3 * time.Second}, []int{0, 2, 1}},
		{"the interval starts at the last call that ran", time.Second,
			[]time.Duration{0, 900 * time.Millisecond, 1100 * time.Millisecond, 1900 * time.Millisecond, 2100 * time.Millisecond}, []int{0, 1, 1}},
		{"zero interval runs every call", 0, []time.Duration{0, 0, time.Millisecond}, []int{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var now time.Time
			l := Limiter{Every: tt.every, now: func() time.Time { return now }}
			var got []int
			for _, d := range tt.at {
				now = start.Add(d)
				l.Do(func(n int) { got = append(got, n) })
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("calls at %v every %v ran with suppressed counts %v; want %v", tt.at, tt.every, got, tt.want)
			}
		})
	}
}

// TestLimiterRealClock: without a test clock the limiter reads time.Now.
func TestLimiterRealClock(t *testing.T) {
	t.Parallel()
	l := Limiter{Every: time.Hour}
	runs := 0
	for range 3 {
		l.Do(func(int) { runs++ })
	}
	if runs != 1 {
		t.Errorf("three calls within an hour ran %d times; want 1", runs)
	}
}
