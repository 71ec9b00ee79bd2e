package ingest

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/kvgroups"
)

// ModelOf says which model a replica serves, from the replica set; false
// when the replica is not (yet) known.
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
type Sink struct {
	models  *index.Models
	modelOf ModelOf
	log     hclog.Logger
	opts    Options

	mu      sync.Mutex
	drivers map[string]map[string]bool // driver -> replicas it holds state for
	owner   map[string]string          // replica -> driver with live state
	blockSz map[string]int             // replica -> block size drivers report
	// groupNames is, per replica, the indexes other than its model's that
	// its KV-cache groups were put in.
	groupNames map[string]map[string]bool
	waiting    map[string]map[string]bool // unknown replica -> drivers to ask for a snapshot when it joins
	pending    map[string]*pending        // unknown replica -> state kept for it
	byAge      pendingByAge               // pending's states, oldest first
	refused    map[string]*refusal        // replica -> why its state is not in the index
	// refusedWait and refusedDue order the refusals not asked for yet
	// (retryRefusedLocked).
	refusedWait refusalQueue
	refusedDue  map[string]*refusalQueue
	resyncs     map[string]bool // drivers to ask for a snapshot (TakeResyncs)
	// refusedNow collects the current update's refusals (ApplyRefusing).
	refusedNow []kvwire.Refusal
	// pendingKeys is the keys in pending, in all.
	pendingKeys int
	stats       Stats

	// synced is the state of owner's replicas as of the end of the last
	// update or drop, replaced (not changed) then, so that Synced (on
	// every request's path) never waits for an update holding mu.
	synced atomic.Pointer[syncedSet]
	// touched is the replicas whose owner or refusal changed since synced
	// was published (repeats allowed): publishSynced revisits only them,
	// so an update costs what it changes, not the fleet's size.
	touched []string
}

// syncedSet is one published state of owner's replicas, numbered.
type syncedSet struct {
	gen    uint64
	states stateMap
}

// NewSink returns a Sink writing into models, with the default bounds.
func NewSink(models *index.Models, modelOf ModelOf, log hclog.Logger) *Sink {
	return NewSinkWith(models, modelOf, Options{Logger: log})
}

// NewSinkWith returns a Sink writing into models, bounded by opts.
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
		models: models, modelOf: modelOf, log: opts.Logger, opts: opts,
		drivers:    map[string]map[string]bool{},
		owner:      map[string]string{},
		blockSz:    map[string]int{},
		groupNames: map[string]map[string]bool{},
		waiting:    map[string]map[string]bool{},
		pending:    map[string]*pending{},
		refused:    map[string]*refusal{},
		refusedDue: map[string]*refusalQueue{},
		resyncs:    map[string]bool{},
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
	s.refusedNow = nil
}

func (s *Sink) applyLocked(u *kvwire.Update) {
	defer s.publishSynced()
	defer s.retryRefusedLocked()
	defer s.boundPendingLocked()
	s.stats.Updates++
	held := s.drivers[u.Driver]
	if u.Snapshot {
		s.stats.Snapshots++
		s.dropDriverPendingLocked(u.Driver)
		listed := make(map[string]bool, len(u.Replicas))
		for _, r := range u.Replicas {
			listed[r.ID] = true
		}
		// Replicas the driver held before but not now hold nothing.
		for id := range held {
			if !listed[id] {
				s.dropLocked(id)
			}
		}
		delete(s.drivers, u.Driver) // Receiver.Expire sends no replicas: the driver is gone
	}
	for i := range u.Replicas {
		s.applyReplica(u.Driver, u.Version, &u.Replicas[i], u.Snapshot)
	}
}

func (s *Sink) applyReplica(driver string, version int, r *kvwire.Replica, snapshot bool) {
	model, ok := s.modelOf(r.ID)
	if !ok {
		// Not in the replica set yet (Consul lists it later): keep its
		// state, to be adopted when it joins.
		s.keepLocked(driver, version, r, snapshot || r.Reset)
		return
	}
	// It joined since its state was kept, and Joined has not run yet.
	s.adoptLocked(r.ID, model)
	s.claimLocked(r.ID, driver)
	if r.BlockSize > 0 {
		s.blockSz[r.ID] = r.BlockSize
	}
	layout := s.layoutLocked(version, r)
	name := func(g int) string { return kvgroups.IndexName(model, g, layout.Primary()) }
	var err error
	if rf, ok := s.refused[r.ID]; ok && !snapshot && !r.Reset {
		// Its state is not in the index: a delta cannot apply.
		s.refusedNow = append(s.refusedNow, kvwire.Refusal{Replica: r.ID, Reason: rf.reason})
		return
	}
	if snapshot || r.Reset {
		// A reset's deletions remove nothing still held, so only additions count.
		byName := map[string][]index.Blocks{}
		for _, g := range r.Groups {
			t, terr := toTier(g.Tier)
			if terr != nil {
				err = terr
				break
			}
			if !indexable(layout, g.KVGroup) {
				s.stats.OtherBlockSize += uint64(len(g.Add))
				continue
			}
			s.stats.Keys += uint64(len(g.Add))
			n := name(g.KVGroup)
			byName[n] = append(byName[n], index.Blocks{Rank: g.Rank, Tier: t, Keys: g.Add})
		}
		if err == nil {
			err = s.replaceLocked(r.ID, model, byName)
		}
	} else {
		byName := map[string][]index.Change{}
		for _, g := range r.Groups {
			t, terr := toTier(g.Tier)
			if terr != nil {
				err = terr
				break
			}
			if !indexable(layout, g.KVGroup) {
				s.stats.OtherBlockSize += uint64(len(g.Add))
				continue
			}
			s.stats.Keys += uint64(len(g.Add) + len(g.Del))
			n := name(g.KVGroup)
			byName[n] = append(byName[n], index.Change{Rank: g.Rank, Tier: t, Add: g.Add, Del: g.Del})
		}
		for n, changes := range byName {
			if err != nil {
				break
			}
			if n != model {
				s.noteGroupLocked(r.ID, n)
			}
			err = s.models.For(n).Update(r.ID, changes)
		}
	}
	switch {
	case err != nil && isRoomErr(err):
		s.refuseLocked(r.ID, model, driver, err)
	case err != nil:
		s.stats.Errors++
		s.log.Error("apply kv update", "replica", r.ID, "driver", driver, "error", err)
	case s.refused[r.ID] != nil:
		delete(s.refused, r.ID) // its snapshot fit: exact again
		s.touched = append(s.touched, r.ID)
		s.log.Info("index took a refused replica's snapshot", "replica", r.ID, "model", model)
	}
}

// claimLocked makes driver the owner of replica's KV state.
func (s *Sink) claimLocked(replica, driver string) {
	prev, owned := s.owner[replica]
	if owned && prev != driver {
		s.log.Warn("replica moved to another driver", "replica", replica, "from", prev, "to", driver)
		delete(s.drivers[prev], replica)
	}
	s.owner[replica] = driver
	if !owned {
		s.touched = append(s.touched, replica) // which driver owns it is not published
	}
	held := s.drivers[driver]
	if held == nil {
		held = map[string]bool{}
		s.drivers[driver] = held
	}
	held[replica] = true
}

// dropLocked forgets replica's KV state and removes it from the index.
func (s *Sink) dropLocked(replica string) {
	if d, ok := s.owner[replica]; ok {
		delete(s.drivers[d], replica)
		delete(s.owner, replica)
	}
	s.touched = append(s.touched, replica)
	delete(s.blockSz, replica)
	delete(s.groupNames, replica)
	if s.opts.Layouts != nil {
		s.opts.Layouts.Forget(replica)
	}
	delete(s.refused, replica)
	s.models.Remove(replica)
}

// Drop removes a replica that left the fleet: its blocks leave the index at
// once, and it is no longer in exact mode. Its driver's session goes on
// sending only deltas, so should the replica come back (a flapping check),
// Joined names that driver to be asked for a fresh snapshot.
func (s *Sink) Drop(replica string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.publishSynced()
	driver, held := s.owner[replica]
	s.dropLocked(replica)
	s.forgetPendingLocked(replica)
	delete(s.waiting, replica)
	if held {
		s.waitFor(replica, driver)
	}
	s.retryRefusedLocked() // its slots are free now
}

// Joined is told that replica entered the replica set. State a driver sent
// for it before (kept while the replica was unknown) goes into the index
// now, so the replica is exact at once. It returns the drivers whose state
// for it could not be kept (discarded at a bound, or dropped when it left
// the set); the caller asks each for a snapshot (kvwire.Receiver.Forget),
// which arrives with that driver's next update.
func (s *Sink) Joined(replica string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.publishSynced()
	if model, ok := s.modelOf(replica); ok {
		s.adoptLocked(replica, model)
	}
	w := s.waiting[replica]
	delete(s.waiting, replica)
	out := slices.Sorted(maps.Keys(w))
	return out
}

// Synced reports whether a live driver session holds replica's KV state,
// which makes the replica's routing mode exact.
// It takes no lock: an update being applied does not delay it.
func (s *Sink) Synced(replica string) bool {
	v := s.synced.Load()
	if v == nil {
		return false
	}
	st, ok := v.states.Get(replica)
	return ok && !st.refused
}

// SyncedGeneration changes whenever the set of synced replicas does: a
// caller may keep what it derived from Synced while it stays the same
// (the replica set keeps its candidates' modes this way).
func (s *Sink) SyncedGeneration() uint64 {
	if v := s.synced.Load(); v != nil {
		return v.gen
	}
	return 0
}

// publishSynced makes synced match owner's replicas, publishing a new
// version only when a touched replica's state changed. Called with mu held.
// A refused replica is owned (its driver is known) but not synced.
func (s *Sink) publishSynced() {
	if len(s.touched) == 0 {
		return
	}
	cur := s.synced.Load()
	next := &syncedSet{gen: 1}
	if cur != nil {
		next.gen, next.states = cur.gen+1, cur.states
	}
	changed := false
	for _, id := range s.touched {
		have, had := next.states.Get(id)
		if _, owned := s.owner[id]; !owned {
			if had {
				next.states, changed = next.states.Delete(id), true
			}
			continue
		}
		want := published{}
		if rf := s.refused[id]; rf != nil {
			want = published{refused: true, reason: rf.reason}
		}
		if !had || have != want {
			next.states, changed = next.states.Set(id, want), true
		}
	}
	s.touched = s.touched[:0]
	if changed {
		s.synced.Store(next)
	}
}

// BlockSize is the block size drivers report for replica (0: unknown).
func (s *Sink) BlockSize(replica string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blockSz[replica]
}

// Owner returns the driver whose session holds replica's KV state, so the
// router can ask that driver for a fresh snapshot; false when none does.
func (s *Sink) Owner(replica string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.owner[replica]
	return d, ok
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
	st.Pending, st.PendingKeys = len(s.pending), s.pendingKeys
	st.RefusedNow = len(s.refused)
	return st
}

var _ kvwire.Sink = (*Sink)(nil)
