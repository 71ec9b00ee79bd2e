package kvcache

import (
	"errors"
	"fmt"
)

// ErrNoSpace reports that not enough free blocks exist; the caller keeps the
// request waiting (or preempts), as vLLM's scheduler does.
var ErrNoSpace = errors.New("not enough free KV blocks")

// ErrBlocksInUse reports a prefix-cache reset refused because requests still
// hold blocks, as vLLM refuses it.
var ErrBlocksInUse = errors.New("cannot reset the prefix cache while requests hold blocks")

type block struct {
	id     int
	group  int // the KV-cache group the block holds data for while hashed
	refCnt int
	hashed bool
	hash   Hash
	parent *Hash
	tokens []uint32 // the block's tokens once hashed, for the ground-truth dump

	prev, next *block // free list links
	free       bool
}

// Pool is the GPU block pool plus the optional CPU tier.
type Pool struct {
	blockSize int
	hasher    Hasher
	blocks    []block
	freeHead  block // sentinel of the free list: head.next is least recently freed
	numFree   int
	// cached maps a hash to the blocks holding it: several copies, and in a
	// hybrid model one entry per group (vLLM's BlockHashWithGroupId).
	cached  map[Hash][]*block
	groups  []GroupSpec
	specs   []specGroup
	cpu     *cpuTier
	events  []Event
	noCache bool
}

// Config sizes a pool.
type Config struct {
	NumBlocks int
	BlockSize int
	CPUBlocks int // 0: no CPU tier
	// CPUBlockSize is the CPU tier's block size, a multiple of BlockSize
	// (0: BlockSize): vLLM's offloaded_block_size.
	CPUBlockSize int
	// CPUPlaceholders sends CPU stores with block_size 0, as vLLM's
	// OffloadingConnector does unless self_describing_kv_events is set.
	CPUPlaceholders bool
	HashSeed        string
	// DisableCache is vLLM's --no-enable-prefix-caching: blocks are never
	// hashed or reused, so nothing is stored and no event is published.
	DisableCache bool
	// Groups are the KV-cache groups in vLLM's order; nil is one
	// full-attention group. They share the pool's blocks, as in vLLM's
	// hybrid allocator, so each group's share is what its requests hold.
	Groups []GroupSpec
}

// New returns a pool whose blocks are all free and uncached.
func New(cfg Config) (*Pool, error) {
	if cfg.NumBlocks < 1 {
		return nil, fmt.Errorf("kv cache needs at least one block, got %d", cfg.NumBlocks)
	}
	if cfg.BlockSize < 1 {
		return nil, fmt.Errorf("block size must be positive, got %d", cfg.BlockSize)
	}
	groups := cfg.Groups
	if groups == nil {
		groups = DefaultGroups()
	}
	if err := ValidateGroups(groups); err != nil {
		return nil, err
	}
	if cfg.CPUBlocks > 0 && !IsDefault(groups) {
		return nil, fmt.Errorf("the CPU tier plays the offloading connector for one full-attention group only, got groups %s", FormatGroups(groups))
	}
	p := &Pool{
		blockSize: cfg.BlockSize,
		hasher:    NewHasher(cfg.HashSeed),
		blocks:    make([]block, cfg.NumBlocks),
		cached:    make(map[Hash][]*block),
		groups:    append([]GroupSpec(nil), groups...),
		specs:     specGroupsOf(groups),
		noCache:   cfg.DisableCache,
	}
	p.freeHead.next, p.freeHead.prev = &p.freeHead, &p.freeHead
	for i := range p.blocks {
		p.blocks[i].id = i
		p.pushFree(&p.blocks[i])
	}
	if cfg.CPUBlocks > 0 {
		p.cpu = newCPUTier(cfg.CPUBlocks, max(cfg.CPUBlockSize/p.blockSize, 1))
		p.cpu.placeholders = cfg.CPUPlaceholders
	}
	return p, nil
}

// BlockSize is the number of tokens per block.
func (p *Pool) BlockSize() int { return p.blockSize }

// Groups are the pool's KV-cache groups in order.
func (p *Pool) Groups() []GroupSpec { return append([]GroupSpec(nil), p.groups...) }

// NumBlocks is the pool's size in GPU blocks.
func (p *Pool) NumBlocks() int { return len(p.blocks) }

// NumFree is the number of GPU blocks no request holds (cached or not).
func (p *Pool) NumFree() int { return p.numFree }

// Usage is the share of GPU blocks held by requests, vLLM's kv_cache_usage_perc.
func (p *Pool) Usage() float64 { return 1 - float64(p.numFree)/float64(len(p.blocks)) }

// TakeEvents returns and forgets the events recorded since the last call:
// one scheduler step's batch.
func (p *Pool) TakeEvents() []Event {
	ev := p.events
	p.events = nil
	return ev
}

func (p *Pool) pushFree(b *block) {
	tail := p.freeHead.prev
	b.prev, b.next = tail, &p.freeHead
	tail.next, p.freeHead.prev = b, b
	b.free = true
	p.numFree++
}

func (p *Pool) unlinkFree(b *block) {
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next, b.free = nil, nil, false
	p.numFree--
}

// touch takes a reference on a cached block, pulling it off the free list.
func (p *Pool) touch(b *block) {
	if b.free {
		p.unlinkFree(b)
	}
	b.refCnt++
}

// allocate pops the least recently freed block. A cached block popped here
// is evicted, which is when vLLM emits BlockRemoved.
func (p *Pool) allocate() *block {
	b := p.freeHead.next
	p.unlinkFree(b)
	if b.hashed {
		p.evict(b)
	}
	b.refCnt = 1
	return b
}

func (p *Pool) evict(b *block) {
	key := b.hash
	copies := p.cached[key]
	for i, c := range copies {
		if c == b {
			copies = append(copies[:i], copies[i+1:]...)
			break
		}
	}
	if len(copies) == 0 {
		delete(p.cached, key)
	} else {
		p.cached[key] = copies
	}
	p.events = append(p.events, p.groupEvent(Event{Kind: BlockRemoved, Hashes: []Hash{b.hash}, Medium: MediumGPU}, b.group))
	b.hashed, b.parent, b.tokens = false, nil, nil
}

// Reset clears the prefix cache, vLLM's reset_prefix_cache: refused while any
// request holds blocks.
func (p *Pool) Reset() error {
	if p.numFree != len(p.blocks) {
		return fmt.Errorf("%w (%d held)", ErrBlocksInUse, len(p.blocks)-p.numFree)
	}
	for h, copies := range p.cached {
		for _, b := range copies {
			b.hashed, b.parent, b.tokens = false, nil, nil
		}
		delete(p.cached, h)
	}
	if p.cpu != nil {
		p.cpu.clear()
	}
	p.events = append(p.events, Event{Kind: AllBlocksCleared})
	return nil
}
