// Package lograte keeps a log line that can repeat for every message, such
// as a bad engine event or a failed send to a router, from flooding the
// driver's log (and Nomad's) while the fault lasts: the line is written at
// most once per interval, with the count of those it stood for.
//
// The KV-event intake and the forwarder both log through it. It imports
// only the standard library.
package lograte

import "time"

// Limiter runs a log call at most once per Every. Its zero Every runs
// every call. A Limiter is not safe for concurrent use: each goroutine
// that logs keeps its own.
type Limiter struct {
	Every time.Duration

	now        func() time.Time // time.Now unless a test sets it
	last       time.Time
	suppressed int
}

// Do calls f with the number of calls suppressed since the last one it
// let through, or counts this call as suppressed when that was less than
// Every ago.
func (l *Limiter) Do(f func(suppressed int)) {
	now := time.Now()
	if l.now != nil {
		now = l.now()
	}
	if !l.last.IsZero() && now.Sub(l.last) < l.Every {
		l.suppressed++
		return
	}
	f(l.suppressed)
	l.last, l.suppressed = now, 0
}
