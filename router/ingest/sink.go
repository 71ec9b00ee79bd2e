package ingest

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

// ModelOf says which model a replica serves, from the replica set; false
// when the replica is not (yet) known.
type ModelOf func(replica string) (string, bool)

// Stats are the ingest counters, for metrics.
type Stats struct {
	Updates   uint64 // updates applied
	Snapshots uint64 // of which snapshots
	Keys      uint64 // keys added or deleted
	Unknown   uint64 // replica entries dropped because the replica is unknown
	Errors    uint64 // index refusals (e.g. too many holders)
}

// Sink applies accepted updates to the index. Safe for concurrent use.
type Sink struct {
	models  *index.Models
	modelOf ModelOf
	log     hclog.Logger

	mu      sync.Mutex
	drivers map[string]map[string]bool // driver -> replicas it holds state for
	owner   map[string]string          // replica -> driver with live state
	blockSz map[string]int             // replica -> block size drivers report
	waiting map[string]map[string]bool // unknown replica -> drivers that mentioned it
	stats   Stats

	// synced is the set of owner's replicas as of the end of the last
	// update or drop, replaced whole, so that Synced (on every request's
	// path) never waits for an update holding mu.
	synced atomic.Pointer[map[string]bool]
}

// NewSink returns a Sink writing into models.
func NewSink(models *index.Models, modelOf ModelOf, log hclog.Logger) *Sink {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Sink{
		models: models, modelOf: modelOf, log: log,
		drivers: map[string]map[string]bool{},
		owner:   map[string]string{},
		blockSz: map[string]int{},
		waiting: map[string]map[string]bool{},
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
	defer s.publishSynced()
	s.stats.Updates++
	held := s.drivers[u.Driver]
	if u.Snapshot {
		s.stats.Snapshots++
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
		held = map[string]bool{}
		s.drivers[u.Driver] = held
		if len(u.Replicas) == 0 && u.Epoch == 0 {
			delete(s.drivers, u.Driver) // Receiver.Expire: the driver is gone
		}
	} else if held == nil {
		held = map[string]bool{}
		s.drivers[u.Driver] = held
	}
	for i := range u.Replicas {
		s.applyReplica(u.Driver, held, &u.Replicas[i], u.Snapshot)
	}
}

func (s *Sink) applyReplica(driver string, held map[string]bool, r *kvwire.Replica, snapshot bool) {
	model, ok := s.modelOf(r.ID)
	if !ok {
		// Not in the replica set yet: remember who spoke of it, so that
		// when it appears that driver is asked for a snapshot.
		s.stats.Unknown++
		if s.waiting[r.ID] == nil {
			s.waiting[r.ID] = map[string]bool{}
		}
		s.waiting[r.ID][driver] = true
		return
	}
	if prev, ok := s.owner[r.ID]; ok && prev != driver {
		s.log.Warn("replica moved to another driver", "replica", r.ID, "from", prev, "to", driver)
		delete(s.drivers[prev], r.ID)
	}
	s.owner[r.ID] = driver
	held[r.ID] = true
	if r.BlockSize > 0 {
		s.blockSz[r.ID] = r.BlockSize
	}
	ix := s.models.For(model)
	var err error
	if snapshot || r.Reset {
		// A reset's deletions remove nothing still held, so only additions count.
		blocks := make([]index.Blocks, 0, len(r.Groups))
		for _, g := range r.Groups {
			t, terr := toTier(g.Tier)
			if terr != nil {
				err = terr
				break
			}
			s.stats.Keys += uint64(len(g.Add))
			blocks = append(blocks, index.Blocks{Rank: g.Rank, Tier: t, Keys: g.Add})
		}
		if err == nil {
			err = ix.Replace(r.ID, blocks)
		}
	} else {
		changes := make([]index.Change, 0, len(r.Groups))
		for _, g := range r.Groups {
			t, terr := toTier(g.Tier)
			if terr != nil {
				err = terr
				break
			}
			s.stats.Keys += uint64(len(g.Add) + len(g.Del))
			changes = append(changes, index.Change{Rank: g.Rank, Tier: t, Add: g.Add, Del: g.Del})
		}
		if err == nil {
			err = ix.Update(r.ID, changes)
		}
	}
	if err != nil {
		s.stats.Errors++
		s.log.Error("apply kv update", "replica", r.ID, "driver", driver, "error", err)
	}
}

// dropLocked forgets replica's KV state and removes it from the index.
func (s *Sink) dropLocked(replica string) {
	if d, ok := s.owner[replica]; ok {
		delete(s.drivers[d], replica)
		delete(s.owner, replica)
	}
	delete(s.blockSz, replica)
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
	delete(s.waiting, replica)
	if held {
		s.waiting[replica] = map[string]bool{driver: true}
	}
}

// Joined is told that replica entered the replica set. It returns the
// drivers that sent state for it while it was unknown; the caller asks each
// for a snapshot (kvwire.Receiver.Forget), so the state arrives again.
func (s *Sink) Joined(replica string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.waiting[replica]
	delete(s.waiting, replica)
	out := make([]string, 0, len(w))
	for d := range w {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// Synced reports whether a live driver session holds replica's KV state,
// which makes the replica's routing mode exact.
// It takes no lock: an update being applied does not delay it.
func (s *Sink) Synced(replica string) bool {
	m := s.synced.Load()
	return m != nil && (*m)[replica]
}

// publishSynced makes synced match owner's replicas, copying only when
// they changed. Called with mu held.
func (s *Sink) publishSynced() {
	if cur := s.synced.Load(); cur != nil && len(*cur) == len(s.owner) {
		same := true
		for id := range s.owner {
			same = same && (*cur)[id]
		}
		if same {
			return
		}
	}
	m := make(map[string]bool, len(s.owner))
	for id := range s.owner {
		m[id] = true
	}
	s.synced.Store(&m)
}

// BlockSize is the block size drivers report for replica (0: unknown).
func (s *Sink) BlockSize(replica string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blockSz[replica]
}

// Stats returns the counters.
func (s *Sink) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

var _ kvwire.Sink = (*Sink)(nil)
