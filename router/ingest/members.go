package ingest

import (
	"maps"
	"slices"

	"github.com/llmgw/llmgw/router/kvgroups"
)

// Member is a replica of the replica set as the Sink hears of it when it
// joins (Joined): the model whose index holds its blocks, and the KV-cache
// group layout its Consul meta declares, so its groups go into the right
// indexes before its first event says.
type Member struct {
	ID    string
	Model string
	// BlockSize is the replica's block size, for the declared layout.
	BlockSize int
	// KVCacheGroups is the declared layout (kvgroups.ParseLayout); "" for
	// none.
	KVCacheGroups string
}

// members is the Sink's view of the replica set: which model each listed
// replica serves. The replica set tells the Sink of each replica that
// joins (Joined) and leaves (Drop), so the Sink never asks it: membership
// flows one way. A Sink made with a ModelOf (NewSink) answers from it
// instead, for callers that keep no replica set of their own to tell.
type members struct {
	lookup ModelOf
	model  map[string]string // replica -> model; unused with lookup
}

func (m *members) modelOf(replica string) (string, bool) {
	if m.lookup != nil {
		return m.lookup(replica)
	}
	model, ok := m.model[replica]
	return model, ok
}

func (m *members) join(r Member) {
	if m.lookup == nil {
		m.model[r.ID] = r.Model
	}
}

func (m *members) leave(replica string) {
	if m.lookup == nil {
		delete(m.model, replica)
	}
}

// Joined is told that a replica entered the replica set (or now serves
// another model, after its Drop). The Sink lists it, declares its layout,
// and moves state a driver sent for it before (kept while the replica was
// unknown) into the index now, so the replica is exact at once. It
// returns the drivers whose state for it could not be kept (discarded at
// a bound, or dropped when it left the set); the caller asks each for a
// snapshot (kvwire.Receiver.Forget), which arrives with that driver's
// next update.
func (s *Sink) Joined(r Member) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.published.publish(s.stateOf)
	s.members.join(r)
	s.declareLocked(r)
	s.adoptLocked(r.ID, r.Model)
	return slices.Sorted(maps.Keys(s.kept.takeWaiting(r.ID)))
}

// declareLocked declares r's layout from its KVCacheGroups: the layout its
// groups are indexed by until its events carry their own. A declaration
// that does not parse is ignored, with a warning: the events will say.
func (s *Sink) declareLocked(r Member) {
	reg := s.opts.Layouts
	if reg == nil {
		return
	}
	var l *kvgroups.Layout
	if r.KVCacheGroups != "" {
		var err error
		if l, err = kvgroups.ParseLayout(r.KVCacheGroups, r.BlockSize); err != nil {
			s.log.Warn("ignoring the replica's declared kv cache groups; its events will say", "replica", r.ID, "error", err)
		}
	}
	reg.Declare(r.ID, l)
}

// Drop is told that replica left the replica set: its blocks leave the
// index at once, its declared layout is forgotten, and it is no longer in
// exact mode. Its driver's session goes on sending only deltas, so should
// the replica come back (a flapping check), Joined names that driver to be
// asked for a fresh snapshot.
func (s *Sink) Drop(replica string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.published.publish(s.stateOf)
	if s.opts.Layouts != nil {
		s.opts.Layouts.Declare(replica, nil)
	}
	s.members.leave(replica)
	driver, held := s.sessions.owner[replica]
	s.dropLocked(replica)
	s.kept.forget(replica)
	s.kept.clearWaiting(replica)
	if held {
		s.kept.waitFor(replica, driver)
	}
	s.retryRefusedLocked() // its slots are free now
}
