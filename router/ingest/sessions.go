package ingest

import (
	"maps"
	"slices"
)

// sessions is what the Sink knows of the drivers' sessions: which driver
// holds live KV state for which replica (its owner, whose session makes
// the replica exact), and the block size drivers report.
type sessions struct {
	drivers map[string]map[string]bool // driver -> replicas it holds state for
	owner   map[string]string          // replica -> driver with live state
	blockSz map[string]int             // replica -> block size drivers report
	// untrusted: replica -> why its driver cannot key its blocks.
	untrusted map[string]string
}

func newSessions() sessions {
	return sessions{drivers: map[string]map[string]bool{}, owner: map[string]string{}, blockSz: map[string]int{},
		untrusted: map[string]string{}}
}

// claim makes driver the owner of replica's KV state. It returns the
// previous owner, if any (another driver when the replica moved).
func (ss *sessions) claim(replica, driver string) (prev string, owned bool) {
	prev, owned = ss.owner[replica]
	if owned && prev != driver {
		delete(ss.drivers[prev], replica)
	}
	ss.owner[replica] = driver
	held := ss.drivers[driver]
	if held == nil {
		held = map[string]bool{}
		ss.drivers[driver] = held
	}
	held[replica] = true
	return prev, owned
}

// release forgets replica's owner and block size.
func (ss *sessions) release(replica string) {
	if d, ok := ss.owner[replica]; ok {
		delete(ss.drivers[d], replica)
		delete(ss.owner, replica)
	}
	delete(ss.blockSz, replica)
	delete(ss.untrusted, replica)
}

// end forgets driver's session and returns the replicas it held: a
// snapshot restates all of them, and an expiry ends them.
func (ss *sessions) end(driver string) map[string]bool {
	held := ss.drivers[driver]
	delete(ss.drivers, driver)
	return held
}

// noteBlockSize records the block size a driver reports for replica (0:
// none reported). It says whether the size changed, so that the Sink
// publishes it.
func (ss *sessions) noteBlockSize(replica string, size int) bool {
	if size <= 0 || ss.blockSz[replica] == size {
		return false
	}
	ss.blockSz[replica] = size
	return true
}

// noteUntrusted records the reason a driver gives for not keying
// replica's blocks ("" when it keys them: every entry says which). It
// says whether the reason changed, so that the Sink publishes it.
func (ss *sessions) noteUntrusted(replica, why string) bool {
	if ss.untrusted[replica] == why {
		return false
	}
	if why == "" {
		delete(ss.untrusted, replica)
	} else {
		ss.untrusted[replica] = why
	}
	return true
}

// BlockSize is the block size replica's engine reports in the KV events
// its driver forwards (0: unknown, or no driver session holds it). It is
// the engine's own: vLLM may have raised the size the job asked for
// (FlashMLA, hybrid models' page alignment), so prompts for replica must
// be keyed at it. It takes no lock, as Synced.
func (s *Sink) BlockSize(replica string) int {
	st, _ := s.published.get(replica)
	return st.blockSize
}

// Owner returns the driver whose session holds replica's KV state, so the
// router can ask that driver for a fresh snapshot; false when none does.
func (s *Sink) Owner(replica string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.sessions.owner[replica]
	return d, ok
}

// Drivers returns, for every driver whose session holds live KV state for
// some replica, those replicas, sorted: the status page's view of which
// driver makes which replica exact.
func (s *Sink) Drivers() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for replica, driver := range s.sessions.owner {
		out[driver] = append(out[driver], replica)
	}
	for _, d := range slices.Collect(maps.Keys(out)) {
		slices.Sort(out[d])
	}
	return out
}
