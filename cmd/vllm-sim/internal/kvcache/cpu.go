package kvcache

import "container/list"

// cpuTier plays vLLM's OffloadingConnector: every block stored on GPU is
// copied to a CPU pool of fixed size with LRU eviction. Its events carry
// medium "CPU" and no token ids, as the connector sends them. A CPU block
// holds factor GPU blocks (the connector's block_size_factor) and is
// named by the hash of the last of them (_get_block_hashes).
type cpuTier struct {
	cap    int
	factor int
	// placeholders: stores go out with block_size 0 (Config.CPUPlaceholders).
	placeholders bool
	lru          *list.List // front: most recently used; values are *cpuEntry
	index        map[Hash]*list.Element
}

type cpuEntry struct {
	hash   Hash
	parent *Hash
	tokens []uint32 // kept for the ground-truth dump only
}

func newCPUTier(capacity, factor int) *cpuTier {
	return &cpuTier{cap: capacity, factor: factor, lru: list.New(), index: make(map[Hash]*list.Element)}
}

// hits is how many blocks after the first gpu ones of hashes the CPU tier
// can load, as the connector's get_num_new_matched_tokens counts them:
// whole CPU blocks from the one the GPU hit ends in, and none when that
// adds less than one CPU block.
func (c *cpuTier) hits(hashes []Hash, gpu int) int {
	f := c.factor
	start := gpu / f
	n := start
	for (n+1)*f <= len(hashes) && c.has(hashes[(n+1)*f-1]) {
		n++
	}
	if n == start || n*f-gpu < f {
		return 0
	}
	return n*f - gpu
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
//
// A CPU block of several GPU blocks goes out once its last one is full,
// named by that block's hash, at the CPU block size, without a parent, as
// the connector's take_events sends it.
func (p *Pool) offload(s *Seq, first, full int) {
	c, f := p.cpu, p.cpu.factor
	var stored []Hash
	var parent *Hash
	flush := func() {
		if len(stored) > 0 {
			size := p.blockSize * f
			if c.placeholders {
				size = 0
			}
			p.events = append(p.events, Event{
				Kind: BlockStored, Hashes: stored, Parent: parent, Tokens: []uint32{},
				BlockSize: size, LoRAName: s.LoRA, LoRAID: s.LoRAID, Medium: MediumCPU,
			})
		}
		stored, parent = nil, nil
	}
	for end := (first/f + 1) * f; end <= full; end += f {
		i := end - 1
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
		e := &cpuEntry{hash: h, tokens: s.unitTokens(end-f, end)}
		if i > 0 && f == 1 {
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

// unitTokens are the tokens of blocks [from, to) of s, for the dump.
func (s *Seq) unitTokens(from, to int) []uint32 {
	if to-from == 1 {
		return s.groups[0].blocks[from].tokens
	}
	var out []uint32
	for i := from; i < to; i++ {
		out = append(out, s.groups[0].blocks[i].tokens...)
	}
	return out
}
