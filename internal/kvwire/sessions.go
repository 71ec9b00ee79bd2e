package kvwire

import (
	"sort"
	"time"
)

// Session is one driver session a Receiver holds: the driver and when it
// was last heard from (an applied update or a repeat of the last one).
type Session struct {
	Driver   string
	LastSeen time.Time
}

// Sessions returns the driver sessions held now, sorted by driver, so
// that a router can show how long each driver has been silent before
// Expire drops it.
func (r *Receiver) Sessions() []Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Session, 0, len(r.drivers))
	for id, pos := range r.drivers {
		out = append(out, Session{Driver: id, LastSeen: pos.lastSeen})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Driver < out[j].Driver })
	return out
}

// Expired counts the sessions Expire dropped since the Receiver was made:
// drivers that went silent without a word.
func (r *Receiver) Expired() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.expired
}
