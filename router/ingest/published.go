package ingest

import "sync/atomic"

// publisher keeps what the request path reads (Synced, Refused): the
// state of the replicas a driver session holds, as of the end of the last
// update or membership change, replaced (not changed) then, so that a
// read never waits for an update holding the Sink's lock.
type publisher struct {
	cur atomic.Pointer[syncedSet]
	// touched is the replicas whose owner or refusal changed since cur was
	// published (repeats allowed): publish revisits only them, so an update
	// costs what it changes, not the fleet's size.
	touched []string
}

// syncedSet is one published state of the owned replicas, numbered.
type syncedSet struct {
	gen    uint64
	states stateMap
}

// touch notes that replica's published state may have changed.
func (p *publisher) touch(replica string) { p.touched = append(p.touched, replica) }

// publish makes cur match stateOf for the touched replicas, publishing a
// new version only when one's state changed. stateOf says what to publish
// for a replica; false for one no driver session holds. Called with the
// Sink's lock held.
func (p *publisher) publish(stateOf func(replica string) (published, bool)) {
	if len(p.touched) == 0 {
		return
	}
	cur := p.cur.Load()
	next := &syncedSet{gen: 1}
	if cur != nil {
		next.gen, next.states = cur.gen+1, cur.states
	}
	changed := false
	for _, id := range p.touched {
		have, had := next.states.Get(id)
		want, owned := stateOf(id)
		switch {
		case !owned && had:
			next.states, changed = next.states.Delete(id), true
		case owned && (!had || have != want):
			next.states, changed = next.states.Set(id, want), true
		}
	}
	p.touched = p.touched[:0]
	if changed {
		p.cur.Store(next)
	}
}

// get is replica's published state.
func (p *publisher) get(replica string) (published, bool) {
	v := p.cur.Load()
	if v == nil {
		return published{}, false
	}
	return v.states.Get(replica)
}

// stateOf is what the Sink publishes for replica: nothing unless a driver
// session holds its state; refused, with the reason, when the index had no
// room for it (owned, so its driver is known, but not synced).
func (s *Sink) stateOf(replica string) (published, bool) {
	if _, owned := s.sessions.owner[replica]; !owned {
		return published{}, false
	}
	bs, why := s.sessions.blockSz[replica], s.sessions.untrusted[replica]
	if rf := s.refusals.byID[replica]; rf != nil {
		return published{refused: true, reason: rf.reason, blockSize: bs, untrusted: why}, true
	}
	return published{blockSize: bs, untrusted: why}, true
}

// Synced reports whether a live driver session holds replica's KV state,
// which makes the replica's routing mode exact.
// It takes no lock: an update being applied does not delay it.
func (s *Sink) Synced(replica string) bool {
	st, ok := s.published.get(replica)
	return ok && !st.refused && st.untrusted == ""
}

// Untrusted reports why replica's driver cannot key its blocks, when it
// says so (its engine's KV events lack a field some keys depend on): it
// then routes in approx mode, and its driver sends none of its blocks.
func (s *Sink) Untrusted(replica string) (string, bool) {
	st, _ := s.published.get(replica)
	return st.untrusted, st.untrusted != ""
}

// Refused reports why replica's KV state is not in the index, when it was
// refused for lack of room: it then routes in approx mode.
func (s *Sink) Refused(replica string) (string, bool) {
	st, ok := s.published.get(replica)
	return st.reason, ok && st.refused
}

// SyncedGeneration changes whenever the set of synced replicas, or the
// block size one reports, does: a
// caller may keep what it derived from Synced while it stays the same
// (the replica set keeps its candidates' modes this way).
func (s *Sink) SyncedGeneration() uint64 {
	if v := s.published.cur.Load(); v != nil {
		return v.gen
	}
	return 0
}
