package ingest

import (
	"container/heap"
	"sort"
	"time"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/kvgroups"
)

// Default bounds on the state kept for replicas the replica set does not
// list yet (see Options).
const (
	DefaultPendingReplicas = 256
	DefaultPendingKeys     = 1 << 20
	DefaultPendingAge      = 10 * time.Minute
)

// Reasons a pending replica's state is discarded, as reported in
// Stats.Discarded and the ingest metric.
const (
	DiscardAge      = "age"      // older than Options.PendingAge
	DiscardReplicas = "replicas" // more than Options.PendingReplicas
	DiscardKeys     = "keys"     // more than Options.PendingKeys in all
)

// kept is the state the Sink keeps for replicas the replica set does not
// list yet, and the drivers it could not keep state from.
type kept struct {
	byID    map[string]*pending        // unknown replica -> state kept for it
	byAge   pendingByAge               // byID's states, oldest first
	keys    int                        // the keys in byID, in all
	waiting map[string]map[string]bool // unknown replica -> drivers to ask for a snapshot when it joins
}

func newKept() kept {
	return kept{byID: map[string]*pending{}, waiting: map[string]map[string]bool{}}
}

// pending is the KV state one driver reported for a replica the replica set
// does not list yet: complete (it started from a snapshot, a reset, or the
// driver's first mention of the replica in a session the Sink followed from
// its snapshot) and kept current by the driver's deltas, so that it can be
// adopted into the index as is when the replica joins.
type pending struct {
	id      string // the replica
	at      int    // its place in kept.byAge
	driver  string
	blockSz int
	// offloadSz is the block size of its offloaded (CPU) tier (0: unknown).
	offloadSz int
	since     time.Time // when it was first kept: the age bound counts from here
	keys      int
	groups    map[rankTier]map[uint64]struct{}
}

type rankTier struct {
	rank  int
	tier  index.Tier
	group string // the index the group goes in, as a suffix to the model (kvgroups.IndexName of "")
}

// keepLocked records r, from driver, for a replica not in the replica set.
// fresh says r is the replica's complete state (snapshot or reset); a delta
// is applied to what is kept, or starts from nothing on the driver's first
// mention. A driver whose deltas for the replica were lost (it is in
// waiting) cannot be followed until it sends a snapshot or a reset: the
// replica stays waiting.
func (s *Sink) keepLocked(driver string, version int, r *kvwire.Replica, fresh bool) {
	p := s.kept.byID[r.ID]
	if p != nil && p.driver != driver {
		s.log.Warn("replica not listed yet moved to another driver", "replica", r.ID, "from", p.driver, "to", driver)
		s.kept.forget(r.ID)
		p = nil
	}
	if p == nil && !fresh && s.kept.waiting[r.ID][driver] {
		s.stats.Unknown++
		s.log.Debug("kv delta for a replica not listed yet cannot be followed (its earlier state was not kept); its driver is asked for a snapshot when it joins",
			"replica", r.ID, "driver", driver)
		return
	}
	layout := s.layoutLocked(version, r)
	groups := make([]rankTier, len(r.Groups))
	for i, g := range r.Groups {
		t, err := toTier(g.Tier)
		if err != nil {
			s.stats.Errors++
			s.log.Error("apply kv update", "replica", r.ID, "driver", driver, "error", err)
			return
		}
		groups[i] = rankTier{g.Rank, t, kvgroups.IndexName("", g.KVGroup, layout.Primary())}
	}
	if p == nil || fresh {
		p = s.kept.start(r.ID, driver, s.opts.Now())
	}
	s.kept.unwait(r.ID, driver)
	if r.BlockSize > 0 {
		p.blockSz = r.BlockSize
	}
	p.offloadSz = r.OffloadBlockSize
	s.kept.apply(p, groups, r.Groups)
	for _, g := range r.Groups {
		s.stats.Keys += uint64(len(g.Add) + len(g.Del))
	}
	s.stats.Kept++
}

// start keeps an empty state for replica from driver, replacing any.
func (k *kept) start(replica, driver string, now time.Time) *pending {
	k.forget(replica)
	p := &pending{id: replica, driver: driver, since: now, groups: map[rankTier]map[uint64]struct{}{}}
	k.byID[replica] = p
	heap.Push(&k.byAge, p)
	return p
}

// apply applies gs, whose indexes are at, to p.
func (k *kept) apply(p *pending, at []rankTier, gs []kvwire.Group) {
	before := p.keys
	for i, g := range gs {
		set := p.groups[at[i]]
		if set == nil {
			set = make(map[uint64]struct{}, len(g.Add))
			p.groups[at[i]] = set
		}
		for _, key := range g.Del {
			delete(set, key)
		}
		for _, key := range g.Add {
			set[key] = struct{}{}
		}
	}
	p.keys = 0
	for _, set := range p.groups {
		p.keys += len(set)
	}
	k.keys += p.keys - before
}

// adoptLocked moves replica's pending state, if any, into model's index
// and makes its driver the replica's owner, so the replica is exact at
// once. It reports whether there was state to adopt.
func (s *Sink) adoptLocked(replica, model string) bool {
	p := s.kept.byID[replica]
	if p == nil {
		return false
	}
	s.kept.forget(replica)
	byName := map[string][]index.Blocks{}
	for rt, set := range p.groups {
		keys := make([]uint64, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		byName[model+rt.group] = append(byName[model+rt.group], index.Blocks{Rank: rt.rank, Tier: rt.tier, Keys: keys})
	}
	for _, blocks := range byName {
		sort.Slice(blocks, func(i, j int) bool {
			return blocks[i].Rank < blocks[j].Rank || blocks[i].Rank == blocks[j].Rank && blocks[i].Tier < blocks[j].Tier
		})
	}
	if err := s.replaceLocked(replica, model, byName); err != nil {
		s.stats.Errors++
		s.log.Error("adopt kv state kept before the replica joined", "replica", replica, "driver", p.driver, "error", err)
		s.kept.waitFor(replica, p.driver)
		return false
	}
	s.claimLocked(replica, p.driver)
	if s.sessions.noteBlockSize(replica, p.blockSz) {
		s.published.touch(replica)
	}
	s.noteOffloadLocked(replica, p.blockSz, p.offloadSz)
	s.stats.Adopted++
	s.log.Debug("adopted kv state kept before the replica joined", "replica", replica, "driver", p.driver, "keys", p.keys, "waited", s.opts.Now().Sub(p.since))
	return true
}

// forget removes replica's pending state, if any.
func (k *kept) forget(replica string) {
	if p := k.byID[replica]; p != nil {
		k.keys -= p.keys
		delete(k.byID, replica)
		heap.Remove(&k.byAge, p.at)
	}
}

// discardLocked drops replica's pending state for reason, counted and
// logged. Its driver's later deltas cannot rebuild it, so the driver waits
// to be asked for a snapshot when the replica joins.
func (s *Sink) discardLocked(replica, reason string) {
	p := s.kept.byID[replica]
	s.kept.forget(replica)
	s.stats.Discarded[reason]++
	s.kept.waitFor(replica, p.driver)
	s.log.Debug("discarded kv state of a replica not listed yet", "replica", replica, "driver", p.driver,
		"reason", reason, "keys", p.keys, "age", s.opts.Now().Sub(p.since))
}

// waitFor notes that driver spoke of replica while the Sink could not keep
// its state, so the driver is asked for a snapshot when the replica joins.
func (k *kept) waitFor(replica, driver string) {
	if k.waiting[replica] == nil {
		k.waiting[replica] = map[string]bool{}
	}
	k.waiting[replica][driver] = true
}

// unwait notes that driver's state for replica is kept again.
func (k *kept) unwait(replica, driver string) {
	delete(k.waiting[replica], driver)
	if len(k.waiting[replica]) == 0 {
		delete(k.waiting, replica)
	}
}

// takeWaiting returns the drivers waiting for replica to join, and
// forgets them.
func (k *kept) takeWaiting(replica string) map[string]bool {
	w := k.waiting[replica]
	delete(k.waiting, replica)
	return w
}

// clearWaiting forgets the drivers waiting for replica to join.
func (k *kept) clearWaiting(replica string) { delete(k.waiting, replica) }

// boundPendingLocked enforces the age, count and key bounds, discarding
// the oldest state first. It runs after every update, so it looks at the
// oldest state only (byAge's top): past the first that no bound discards,
// none is discarded (younger, and the counts only fall).
func (s *Sink) boundPendingLocked() {
	cutoff := s.opts.Now().Add(-s.opts.PendingAge)
	for len(s.kept.byAge) > 0 {
		p := s.kept.byAge[0]
		switch {
		case p.since.Before(cutoff):
			s.discardLocked(p.id, DiscardAge)
		case len(s.kept.byID) > s.opts.PendingReplicas:
			s.discardLocked(p.id, DiscardReplicas)
		case s.kept.keys > s.opts.PendingKeys:
			s.discardLocked(p.id, DiscardKeys)
		default:
			return
		}
	}
}

// pendingByAge is the pending states, oldest first (ties by replica id), as
// a heap (container/heap).
type pendingByAge []*pending

func (q pendingByAge) Len() int { return len(q) }
func (q pendingByAge) Less(i, j int) bool {
	a, b := q[i], q[j]
	return a.since.Before(b.since) || a.since.Equal(b.since) && a.id < b.id
}
func (q pendingByAge) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].at, q[j].at = i, j
}
func (q *pendingByAge) Push(x any) {
	p := x.(*pending)
	p.at = len(*q)
	*q = append(*q, p)
}
func (q *pendingByAge) Pop() any {
	old := *q
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return p
}

// dropDriver forgets what driver said about replicas not listed yet: a
// snapshot restates all of a driver's state (what it lists is kept again,
// fresh) and an expiry ends it.
func (k *kept) dropDriver(driver string) {
	for id, p := range k.byID {
		if p.driver == driver {
			k.forget(id)
		}
	}
	for id, ds := range k.waiting {
		delete(ds, driver)
		if len(ds) == 0 {
			delete(k.waiting, id)
		}
	}
}
