package server

import (
	"sync"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/replicas"
)

// capacitySlack is the index room beyond the fleet's advertised KV capacity:
// blocks evicted on the engine but not yet reported keep a place meanwhile.
const capacitySlack = 1.25

// capacity bounds each model's index by the KV blocks its replicas
// advertise (vllm:cache_config_info), so a stale or runaway index cannot
// grow without limit.
type capacity struct {
	models *index.Models
	reps   *replicas.Set

	mu     sync.Mutex
	blocks map[string]int // replica -> advertised blocks
	limit  map[string]int // model -> MaxKeys last set
}

func newCapacity(models *index.Models, set *replicas.Set) *capacity {
	return &capacity{models: models, reps: set, blocks: map[string]int{}, limit: map[string]int{}}
}

func (c *capacity) observe(replica string, blocks int) {
	if blocks <= 0 {
		return
	}
	r, ok := c.reps.Get(replica)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blocks[replica] = blocks
	total := 0
	for _, rep := range c.reps.ForModel(r.Model) {
		total += c.blocks[rep.ID]
	}
	limit := int(float64(total) * capacitySlack)
	if c.limit[r.Model] != limit {
		c.limit[r.Model] = limit
		c.models.For(r.Model).SetMaxKeys(limit)
	}
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
