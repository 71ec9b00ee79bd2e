package kvwire

import (
	"sort"
	"time"
)

// Session is one driver session the Receiver holds: the epoch and sequence
// number of the driver's last accepted update, and when it was heard from.
type Session struct {
	Driver     string
	Epoch, Seq uint64
	LastSeen   time.Time
}

// Sessions lists the driver sessions, by driver id: what the router's
// status page shows as the drivers' sync state. A driver missing here
// (forgotten or expired) must send a snapshot before its deltas count.
func (r *Receiver) Sessions() []Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Session, 0, len(r.drivers))
	for id, pos := range r.drivers {
		out = append(out, Session{Driver: id, Epoch: pos.epoch, Seq: pos.seq, LastSeen: pos.lastSeen})
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
