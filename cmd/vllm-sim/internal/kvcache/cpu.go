package kvcache

import "container/list"

// cpuTier plays vLLM's OffloadingConnector: every block stored on GPU is
// copied to a CPU pool of fixed size with LRU eviction. Its events carry
// medium "CPU" and no token ids, as the connector sends them.
type cpuTier struct {
	cap   int
	lru   *list.List // front: most recently used; values are *cpuEntry
	index map[Hash]*list.Element
}

type cpuEntry struct {
	hash   Hash
	parent *Hash
	tokens []uint32 // kept for the ground-truth dump only
}

func newCPUTier(capacity int) *cpuTier {
	return &cpuTier{cap: capacity, lru: list.New(), index: make(map[Hash]*list.Element)}
}

func (c *cpuTier) has(h Hash) bool { _, ok := c.index[h]; return ok }

func (c *cpuTier) touch(h Hash) {
	if e, ok := c.index[h]; ok {
		c.lru.MoveToFront(e)
	}
}

func (c *cpuTier) clear() {
	c.lru.Init()
	clear(c.index)
}

// offload copies blocks [first, full) of s to the CPU tier. Consecutive new
// blocks go out as one BlockStored; a CPU eviction first flushes the blocks
// stored so far, so a block is never removed before it was announced.
func (p *Pool) offload(s *Seq, first, full int) {
	c := p.cpu
	var stored []Hash
	var parent *Hash
	flush := func() {
		if len(stored) > 0 {
			p.events = append(p.events, Event{
				Kind: BlockStored, Hashes: stored, Parent: parent, Tokens: []uint32{},
				BlockSize: p.blockSize, LoRAName: s.LoRA, LoRAID: s.LoRAID, Medium: MediumCPU,
			})
		}
		stored, parent = nil, nil
	}
	for i := first; i < full; i++ {
		h := s.hashes[i]
		if e, ok := c.index[h]; ok {
			c.lru.MoveToFront(e)
			continue
		}
		if c.lru.Len() >= c.cap {
			flush()
			old := c.lru.Remove(c.lru.Back()).(*cpuEntry)
			delete(c.index, old.hash)
			p.events = append(p.events, Event{Kind: BlockRemoved, Hashes: []Hash{old.hash}, Medium: MediumCPU})
		}
		e := &cpuEntry{hash: h, tokens: s.groups[0].blocks[i].tokens}
		if i > 0 {
			ph := s.hashes[i-1]
			e.parent = &ph
		}
		c.index[h] = c.lru.PushFront(e)
		if len(stored) == 0 {
			parent = e.parent
		}
		stored = append(stored, h)
	}
	flush()
}
