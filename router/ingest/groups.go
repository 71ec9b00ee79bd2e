package ingest

import (
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/kvgroups"
)

// A hybrid replica's KV-cache groups each go into their own index of the
// model (kvgroups.IndexName): the primary (first full-attention) group
// into the model's own, as every group 0 did before, the others into one
// each. So a group's removals never touch another's keys, and the prefix
// scorer combines the groups' answers with the engine's rule.

// layoutLocked is the layout r's groups are indexed by: the one r carries
// (recorded as its events' layout), else the one recorded before, else
// the declared one. A version 1 update has group 0 only, the driver's
// primary group.
func (s *Sink) layoutLocked(version int, r *kvwire.Replica) *kvgroups.Layout {
	reg := s.opts.Layouts
	if reg == nil || version < 2 {
		return nil
	}
	if r.Layout != nil {
		return reg.FromEvents(r.ID, r.Layout, r.BlockSize)
	}
	if l := reg.EventsLayout(r.ID); l != nil {
		return l
	}
	return reg.Of(r.ID)
}

// noteGroupLocked records name among the indexes other than its model's
// that replica's groups were put in.
func (s *Sink) noteGroupLocked(replica, name string) {
	set := s.groupNames[replica]
	if set == nil {
		set = map[string]bool{}
		s.groupNames[replica] = set
	}
	set[name] = true
}

// replaceLocked makes byName the complete state of replica in every index
// of model it has state in: a group listed nowhere in byName holds
// nothing now.
func (s *Sink) replaceLocked(replica, model string, byName map[string][]index.Blocks) error {
	if _, ok := byName[model]; !ok {
		byName[model] = nil
	}
	for name := range s.groupNames[replica] {
		if _, ok := byName[name]; !ok {
			byName[name] = nil
		}
	}
	for name, blocks := range byName {
		if name != model {
			s.noteGroupLocked(replica, name)
		}
		if err := s.models.For(name).Replace(replica, blocks); err != nil {
			return err
		}
	}
	return nil
}

// updateLocked applies changes, by index name, to replica's state in
// model's indexes.
func (s *Sink) updateLocked(replica, model string, changes map[string][]index.Change) error {
	for name, cs := range changes {
		if name != model {
			s.noteGroupLocked(replica, name)
		}
		if err := s.models.For(name).Update(replica, cs); err != nil {
			return err
		}
	}
	return nil
}
