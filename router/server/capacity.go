package server

import (
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/replicas"
)

// capacitySlack is the index room beyond the fleet's advertised KV capacity:
// blocks evicted on the engine but not yet reported keep a place meanwhile.
// The same slack applies per replica in the oversize check.
const capacitySlack = 1.25

// resnapshotEvery is the shortest gap between two snapshot requests to one
// driver for oversized replicas: a snapshot costs the driver a full copy of
// its state, and one that does not clear the alarm (an engine misreporting
// its capacity) must not turn into a snapshot every check.
const resnapshotEvery = time.Minute

// driverSessions reaches the driver behind a replica: Owner is
// ingest.Sink's, Resnapshot ends the driver's session
// (kvwire.Receiver.Forget) so its next update is answered "snapshot
// required" and it sends its full state.
type driverSessions interface {
	Owner(replica string) (driver string, ok bool)
	Resnapshot(driver string)
}

// ingestSessions is the router's driverSessions.
type ingestSessions struct {
	sink     *ingest.Sink
	receiver *kvwire.Receiver
}

func (i ingestSessions) Owner(replica string) (string, bool) { return i.sink.Owner(replica) }
func (i ingestSessions) Resnapshot(driver string)            { i.receiver.Forget(driver) }

// capacity bounds each model's index by the KV blocks its replicas
// advertise (vllm:cache_config_info; a CPU tier they do not advertise gets
// cpuRatio × their GPU blocks, capacity_cap.go), so a stale or runaway index cannot
// grow without limit, and checks each replica's share of the index against
// its own advertised capacity (index.Models.Oversized): a replica holding
// more blocks than its engine has room for means the index missed
// removals, which the router reports as an alarm and repairs by asking the
// replica's driver for a fresh snapshot (at most once per resnapshotEvery
// per driver), which replaces the replica's share of the index.
type capacity struct {
	models   *index.Models
	reps     *replicas.Set
	log      hclog.Logger
	sessions driverSessions // nil: alarm only
	cpuRatio int            // CPU-tier room per GPU block where no CPU blocks are advertised
	now      func() time.Time

	mu        sync.Mutex
	adv       map[string][2]int // replica -> advertised blocks per tier
	limit     map[string]int    // model -> MaxKeys last set
	oversized map[string]index.Oversize
	asked     map[string]time.Time // driver -> when it was last asked for a snapshot
	repairs   map[string]uint64    // replica -> snapshots asked for it
}

func newCapacity(models *index.Models, set *replicas.Set, sessions driverSessions, cpuRatio int, log hclog.Logger) *capacity {
	return &capacity{models: models, reps: set, log: log, sessions: sessions, cpuRatio: cpuRatio, now: time.Now,
		adv: map[string][2]int{}, limit: map[string]int{}, oversized: map[string]index.Oversize{},
		asked: map[string]time.Time{}, repairs: map[string]uint64{}}
}

// observe records replica's advertised GPU and CPU blocks from a scrape and
// resizes its model's index cap.
func (c *capacity) observe(replica string, gpu, cpu int) {
	if gpu+cpu <= 0 {
		return
	}
	r, ok := c.reps.Get(replica)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adv[replica] = [2]int{index.GPU: gpu, index.CPU: cpu}
	var advs [][2]int
	for _, rep := range c.reps.ForModel(r.Model) {
		if a, ok := c.adv[rep.ID]; ok {
			advs = append(advs, a)
		}
	}
	limit := keyCap(advs, c.cpuRatio)
	if c.limit[r.Model] != limit {
		c.limit[r.Model] = limit
		c.models.For(r.Model).SetMaxKeys(limit)
	}
}

// check runs the oversize check over every model's index, logs a warning
// when a replica tier goes over its advertised capacity with slack (and
// when it is back within it), and keeps the result for the metrics.
// Replicas whose capacity is unknown, or that left the set, are skipped.
func (c *capacity) check() {
	c.mu.Lock()
	for id := range c.adv {
		if _, ok := c.reps.Get(id); !ok {
			delete(c.adv, id)
			delete(c.repairs, id)
		}
	}
	for d, at := range c.asked {
		if c.now().Sub(at) >= resnapshotEvery {
			delete(c.asked, d)
		}
	}
	adv := make(map[string][2]int, len(c.adv))
	for id, a := range c.adv {
		adv[id] = a
	}
	c.mu.Unlock()
	found := c.models.Oversized(func(replica string) (int, int, bool) {
		a, ok := adv[replica]
		cpu := a[index.CPU]
		if cpu == 0 {
			// No CPU tier advertised (a KV connector's offload buffer is
			// not in cache_config_info): with no known capacity there is
			// no evidence of missed removals, and a guess would alarm and
			// resnapshot every minute. The key cap (keyCap) still bounds
			// these blocks.
			cpu = math.MaxInt32
		}
		return a[index.GPU], cpu, ok
	}, capacitySlack-1)
	now := make(map[string]index.Oversize, len(found))
	for _, o := range found {
		now[oversizeKey(o.Replica, o.Tier)] = o
	}
	c.mu.Lock()
	prev := c.oversized
	c.oversized = now
	c.mu.Unlock()
	for _, k := range sortedKeys(now) {
		if _, was := prev[k]; !was {
			o := now[k]
			r, _ := c.reps.Get(o.Replica)
			c.log.Warn("replica's share of the block index exceeds its advertised KV capacity; the index missed removals",
				"replica", o.Replica, "model", r.Model, "tier", o.Tier.String(), "indexed_blocks", o.Held, "capacity_blocks", o.Capacity, "slack", capacitySlack)
		}
	}
	for _, k := range sortedKeys(prev) {
		if _, still := now[k]; !still {
			o := prev[k]
			c.log.Info("replica's share of the block index is within its KV capacity again", "replica", o.Replica, "tier", o.Tier.String())
		}
	}
	for _, k := range sortedKeys(now) {
		c.repair(now[k].Replica)
	}
}

// repair asks the driver holding an oversized replica's state for a fresh
// snapshot, unless that driver was asked less than resnapshotEvery ago
// (for this replica or another: one snapshot restates all of a driver's
// replicas).
func (c *capacity) repair(replica string) {
	if c.sessions == nil {
		return
	}
	driver, ok := c.sessions.Owner(replica)
	if !ok {
		return // no session: the driver's next update starts with a snapshot anyway
	}
	c.mu.Lock()
	now := c.now()
	if at, ok := c.asked[driver]; ok && now.Sub(at) < resnapshotEvery {
		c.mu.Unlock()
		return
	}
	c.asked[driver] = now
	c.repairs[replica]++
	c.mu.Unlock()
	c.sessions.Resnapshot(driver)
	c.log.Warn("asked the replica's driver for a fresh snapshot to repair its index share", "replica", replica, "driver", driver)
}

// Advertised returns replica's advertised blocks per tier and whether a
// scrape has reported them.
func (c *capacity) Advertised(replica string) ([2]int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.adv[replica]
	return a, ok
}

// Oversized reports whether the last check found replica's tier over its
// capacity.
func (c *capacity) Oversized(replica string, t index.Tier) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.oversized[oversizeKey(replica, t)]
	return ok
}

// Repairs returns how many snapshots were asked for replica's oversize.
func (c *capacity) Repairs(replica string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.repairs[replica]
}

// Limits returns each model's key cap (0: none known yet).
func (c *capacity) Limits() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.limit))
	for m, l := range c.limit {
		out[m] = l
	}
	return out
}

func oversizeKey(replica string, t index.Tier) string { return t.String() + "\x00" + replica }

func sortedKeys(m map[string]index.Oversize) []string {
	out := slices.Sorted(maps.Keys(m))
	return out
}
