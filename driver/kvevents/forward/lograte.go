package forward

import "time"

// rateLimit runs a log call at most once per interval, passing how many
// calls were suppressed since the last one. The intake keeps its own copy
// of these few lines: a shared one would need a package of its own.
type rateLimit struct {
	every      time.Duration
	last       time.Time
	suppressed int
}

func (r *rateLimit) do(f func(suppressed int)) {
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < r.every {
		r.suppressed++
		return
	}
	f(r.suppressed)
	r.last, r.suppressed = now, 0
}
