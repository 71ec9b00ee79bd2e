package server

import (
	"math"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/replicas"
)

// capacitySlack is the index room beyond the fleet's advertised KV capacity:
// blocks evicted on the engine but not yet reported keep a place meanwhile.
// The same slack applies per replica in the oversize check.
const capacitySlack = 1.25

// capacity bounds each model's index by the KV blocks its replicas
// advertise (vllm:cache_config_info), so a stale or runaway index cannot
// grow without limit, and checks each replica's share of the index against
// its own advertised capacity (index.Models.Oversized): a replica holding
// more blocks than its engine has room for means the index missed
// removals, which the router reports as an alarm.
type capacity struct {
	models *index.Models
	reps   *replicas.Set
	log    hclog.Logger

	mu        sync.Mutex
	adv       map[string][2]int // replica -> advertised blocks per tier
	limit     map[string]int    // model -> MaxKeys last set
	oversized map[string]index.Oversize
}

func newCapacity(models *index.Models, set *replicas.Set, log hclog.Logger) *capacity {
	return &capacity{models: models, reps: set, log: log, adv: map[string][2]int{}, limit: map[string]int{}, oversized: map[string]index.Oversize{}}
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
	total := 0
	for _, rep := range c.reps.ForModel(r.Model) {
		a := c.adv[rep.ID]
		total += a[index.GPU] + a[index.CPU]
	}
	limit := int(float64(total) * capacitySlack)
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
			cpu = math.MaxInt32 // no CPU tier advertised: offloaded blocks are not checked
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
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
