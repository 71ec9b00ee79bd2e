package ingest

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/kvgroups"
)

// ModelOf says which model a replica serves; false when the replica is not
// (yet) listed. A Sink made with one (NewSink) asks it instead of keeping
// its own view of the replica set.
type ModelOf func(replica string) (string, bool)

// Stats are the ingest counters and gauges, for metrics.
type Stats struct {
	Updates   uint64 // updates applied
	Snapshots uint64 // of which snapshots
	Keys      uint64 // keys added or deleted
	// Unknown counts replica entries for a replica not listed yet that
	// could not be kept (its driver's earlier state was discarded): the
	// driver is asked for a snapshot when the replica joins.
	Unknown uint64
	Errors  uint64 // bad tiers and other errors of the index
	// OtherBlockSize counts keys of KV-cache groups whose block size is not
	// the primary group's: they can never match a prompt's keys, so they
	// are not indexed.
	OtherBlockSize uint64
	// Refused counts replica entries refused for lack of room in the index
	// (holders or key cap); Resyncs the snapshots asked for once room freed.
	Refused uint64
	Resyncs uint64
	// RefusedNow is the replicas refused now (approx mode until a snapshot fits).
	RefusedNow int
	// Kept counts replica entries kept for a replica not listed yet;
	// Adopted the kept states moved into the index when their replica
	// joined; Discarded the kept states dropped, by reason (Discard*).
	Kept      uint64
	Adopted   uint64
	Discarded map[string]uint64
	// Pending and PendingKeys are what is kept now: replicas and keys.
	Pending     int
	PendingKeys int
}

// Options bound the state a Sink keeps for replicas the replica set does
// not list yet; zero values take the defaults.
type Options struct {
	Logger hclog.Logger
	// PendingReplicas, PendingKeys and PendingAge bound that state: past
	// either count the oldest replica's state is discarded, and so is any
	// kept longer than PendingAge (checked on every update; drivers send
	// at least every keep-alive).
	PendingReplicas int
	PendingKeys     int
	PendingAge      time.Duration
	Now             func() time.Time
	// Layouts, when set, receives each replica's KV-cache group layout
	// from its updates, and the groups other than the primary one are
	// indexed apart (kvgroups.IndexName); nil indexes every group's keys
	// in the model's index, as version 1 did.
	Layouts *kvgroups.Registry
}

// Sink applies accepted updates to the index. Safe for concurrent use.
//
// Its state is split by concern, all under mu: the replica set as the
// Sink hears of it (members.go), the drivers' sessions (sessions.go), the
// state kept for replicas not listed yet (pending.go), the refusals for
// lack of room (refused.go), and what the request path reads, published
// at the end of each change (published.go).
type Sink struct {
	models *index.Models
	log    hclog.Logger
	opts   Options

	mu        sync.Mutex
	members   members
	sessions  sessions
	kept      kept
	refusals  refusals
	published publisher
	// groupNames is, per replica, the indexes other than its model's that
	// its KV-cache groups were put in (groups.go).
	groupNames map[string]map[string]bool
	stats      Stats
}

// New returns a Sink writing into models, bounded by opts, that keeps its
// own view of the replica set from what the set tells it (Joined, Drop):
// the router's.
func New(models *index.Models, opts Options) *Sink { return NewSinkWith(models, nil, opts) }

// NewSink returns a Sink writing into models, with the default bounds,
// that asks modelOf which model a replica serves (nil: as New).
func NewSink(models *index.Models, modelOf ModelOf, log hclog.Logger) *Sink {
	return NewSinkWith(models, modelOf, Options{Logger: log})
}

// NewSinkWith returns a Sink writing into models, bounded by opts, that
// asks modelOf which model a replica serves (nil: as New).
func NewSinkWith(models *index.Models, modelOf ModelOf, opts Options) *Sink {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.PendingReplicas <= 0 {
		opts.PendingReplicas = DefaultPendingReplicas
	}
	if opts.PendingKeys <= 0 {
		opts.PendingKeys = DefaultPendingKeys
	}
	if opts.PendingAge <= 0 {
		opts.PendingAge = DefaultPendingAge
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Sink{
		models: models, log: opts.Logger, opts: opts,
		members:    members{lookup: modelOf, model: map[string]string{}},
		sessions:   newSessions(),
		kept:       newKept(),
		refusals:   newRefusals(),
		groupNames: map[string]map[string]bool{},
		stats:      Stats{Discarded: map[string]uint64{}},
	}
}

func toTier(t kvwire.Tier) (index.Tier, error) {
	switch t {
	case kvwire.TierGPU:
		return index.GPU, nil
	case kvwire.TierCPU:
		return index.CPU, nil
	}
	return 0, fmt.Errorf("unknown tier %d", t)
}

// ApplyUpdate implements kvwire.Sink.
func (s *Sink) ApplyUpdate(u *kvwire.Update) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyLocked(u)
	s.refusals.now = nil
}

func (s *Sink) applyLocked(u *kvwire.Update) {
	defer s.published.publish(s.stateOf)
	defer s.retryRefusedLocked()
	defer s.boundPendingLocked()
	s.stats.Updates++
	if u.Snapshot {
		s.stats.Snapshots++
		s.kept.dropDriver(u.Driver)
		listed := make(map[string]bool, len(u.Replicas))
		for _, r := range u.Replicas {
			listed[r.ID] = true
		}
		// Replicas the driver held before but not now hold nothing. The
		// session ends (Receiver.Expire sends no replicas: the driver is
		// gone); those listed are claimed again below.
		for id := range s.sessions.end(u.Driver) {
			if !listed[id] {
				s.dropLocked(id)
			}
		}
	}
	for i := range u.Replicas {
		s.applyReplica(u.Driver, u.Version, &u.Replicas[i], u.Snapshot)
	}
}

// applyReplica applies one replica's entry of driver's update: kept while
// the replica is not listed, refused while its state is not in the index
// and the entry is a delta, else written to the index.
func (s *Sink) applyReplica(driver string, version int, r *kvwire.Replica, snapshot bool) {
	full := snapshot || r.Reset // the replica's complete state
	model, ok := s.members.modelOf(r.ID)
	if !ok {
		// Not in the replica set yet (Consul lists it later): keep its
		// state, to be adopted when it joins.
		s.keepLocked(driver, version, r, full)
		return
	}
	// It joined since its state was kept, and Joined has not run yet.
	s.adoptLocked(r.ID, model)
	s.claimLocked(r.ID, driver)
	if s.sessions.noteBlockSize(r.ID, r.BlockSize) {
		s.published.touch(r.ID)
	}
	s.noteOffloadLocked(r.ID, r.BlockSize, r.OffloadBlockSize)
	if s.sessions.noteUntrusted(r.ID, r.Approx) {
		s.published.touch(r.ID)
		if r.Approx != "" {
			s.log.Warn("driver cannot key a replica's blocks; it routes in approx mode", "replica", r.ID, "driver", driver, "reason", r.Approx)
		}
	}
	layout := s.layoutLocked(version, r)
	if rf, ok := s.refusals.byID[r.ID]; ok && !full {
		// Its state is not in the index: a delta cannot apply.
		s.refusals.now = append(s.refusals.now, kvwire.Refusal{Replica: r.ID, Reason: rf.reason})
		return
	}
	err := s.writeLocked(r, model, layout, full)
	switch {
	case err != nil && isRoomErr(err):
		s.refuseLocked(r.ID, model, driver, err)
	case err != nil:
		s.stats.Errors++
		s.log.Error("apply kv update", "replica", r.ID, "driver", driver, "error", err)
	case s.refusals.byID[r.ID] != nil:
		delete(s.refusals.byID, r.ID) // its snapshot fit: exact again
		s.published.touch(r.ID)
		s.log.Info("index took a refused replica's snapshot", "replica", r.ID, "model", model)
	}
}

// writeLocked writes r's groups into model's indexes (groups.go): as the
// replica's complete state when full, which replaces what the indexes held
// of it (a reset's deletions remove nothing still held, so only additions
// count), else as changes to it.
func (s *Sink) writeLocked(r *kvwire.Replica, model string, layout *kvgroups.Layout, full bool) error {
	var blocks map[string][]index.Blocks
	var changes map[string][]index.Change
	if full {
		blocks = map[string][]index.Blocks{}
	} else {
		changes = map[string][]index.Change{}
	}
	for _, g := range r.Groups {
		t, err := toTier(g.Tier)
		if err != nil {
			return err
		}
		if !layout.Indexed(g.KVGroup) {
			s.stats.OtherBlockSize += uint64(len(g.Add))
			continue
		}
		n := kvgroups.IndexName(model, g.KVGroup, layout.Primary())
		if full {
			s.stats.Keys += uint64(len(g.Add))
			blocks[n] = append(blocks[n], index.Blocks{Rank: g.Rank, Tier: t, Keys: g.Add})
		} else {
			s.stats.Keys += uint64(len(g.Add) + len(g.Del))
			changes[n] = append(changes[n], index.Change{Rank: g.Rank, Tier: t, Add: g.Add, Del: g.Del})
		}
	}
	if full {
		return s.replaceLocked(r.ID, model, blocks)
	}
	return s.updateLocked(r.ID, model, changes)
}

// claimLocked makes driver the owner of replica's KV state.
func (s *Sink) claimLocked(replica, driver string) {
	prev, owned := s.sessions.claim(replica, driver)
	if owned && prev != driver {
		s.log.Warn("replica moved to another driver", "replica", replica, "from", prev, "to", driver)
	}
	if !owned {
		s.published.touch(replica) // which driver owns it is not published
	}
}

// noteOffloadLocked tells the layouts the block sizes of replica's GPU and
// offloaded tiers, as its driver reports them with every entry (version
// 4; an older driver reports no offloaded size, and the CPU tier is then
// predicted block by block).
func (s *Sink) noteOffloadLocked(replica string, blockSize, offloadSize int) {
	if s.opts.Layouts != nil && blockSize > 0 {
		s.opts.Layouts.SetOffload(replica, blockSize, offloadSize)
	}
}

// dropLocked forgets replica's KV state and removes it from the index.
func (s *Sink) dropLocked(replica string) {
	s.sessions.release(replica)
	s.published.touch(replica)
	delete(s.groupNames, replica)
	if s.opts.Layouts != nil {
		s.opts.Layouts.Forget(replica)
	}
	delete(s.refusals.byID, replica)
	s.models.Remove(replica)
}

// Stats returns the counters and what is kept for unknown replicas now.
func (s *Sink) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Discarded = make(map[string]uint64, len(s.stats.Discarded))
	for k, v := range s.stats.Discarded {
		st.Discarded[k] = v
	}
	st.Pending, st.PendingKeys = len(s.kept.byID), s.kept.keys
	st.RefusedNow = len(s.refusals.byID)
	return st
}

var _ kvwire.Sink = (*Sink)(nil)
