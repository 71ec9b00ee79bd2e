package ratelimit

import (
	"math"
	"time"
)

// bucket is a token bucket of capacity size refilled at rate per second.
// level may go below zero: charges that peers report, and usage
// corrections, are debts paid off by the refill.
type bucket struct {
	level float64
	at    time.Time
	init  bool
}

// refill brings the bucket to now; a new bucket starts full.
func (b *bucket) refill(now time.Time, rate, size float64) {
	if !b.init {
		b.level, b.at, b.init = size, now, true
		return
	}
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.level = math.Min(size, b.level+rate*dt)
		b.at = now
	}
}

// charge takes n (negative: gives back), keeping the debt within one
// bucket's size so that no report, however wrong, locks a tenant out for
// longer than one refill.
func (b *bucket) charge(n, size float64) {
	b.level = math.Max(-size, math.Min(size, b.level-n))
}

// wait is how long until the bucket holds n.
func (b *bucket) wait(n, rate float64) time.Duration {
	if b.level >= n || rate <= 0 {
		return 0
	}
	return time.Duration((n - b.level) / rate * float64(time.Second))
}

// untilFull is how long until the bucket is full again.
func (b *bucket) untilFull(rate, size float64) time.Duration {
	return b.wait(size, rate)
}
